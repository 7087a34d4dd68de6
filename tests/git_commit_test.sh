#!/bin/sh
# cmake/git_commit.cmake: the header names the checkout's commit (a short hash, "-dirty" with
# uncommitted changes), "unknown" outside git, and is not rewritten when nothing changed (so an
# unchanged commit rebuilds nothing).
#   git_commit_test.sh CMAKE SOURCE_DIR
set -eu
cmake=$1
source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gpusim-commit.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

"$cmake" -DSOURCE_DIR="$source" -DOUTPUT="$work/in_git.h" -P "$source/cmake/git_commit.cmake"
grep -Eq '^#define GPUSIM_GIT_COMMIT "[0-9a-f]{7,}(-dirty)?"$' "$work/in_git.h" || { cat "$work/in_git.h"; exit 1; }
touch -d '2000-01-01' "$work/in_git.h"
"$cmake" -DSOURCE_DIR="$source" -DOUTPUT="$work/in_git.h" -P "$source/cmake/git_commit.cmake"
test "$(date -r "$work/in_git.h" +%Y)" = 2000 || { echo "rewritten though unchanged"; exit 1; }

mkdir "$work/tarball"  # a source tree outside git
"$cmake" -DSOURCE_DIR="$work/tarball" -DOUTPUT="$work/no_git.h" -P "$source/cmake/git_commit.cmake"
grep -q '^#define GPUSIM_GIT_COMMIT "unknown"$' "$work/no_git.h" || { cat "$work/no_git.h"; exit 1; }

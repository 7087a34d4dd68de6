#!/usr/bin/env python3
"""Writes a PyTorch profiler trace (Kineto JSON) out as the SQLite database Nsight Systems exports
(`nsys export --type sqlite`) for the same program run under
torch.autograd.profiler.emit_nvtx(record_shapes=True): each CPU op becomes an NVTX push/pop range
whose text is PyTorch's ("aten::mm, seq = 3, op_id = 17, sizes = [[2, 2048], [2048, 8192]]"), each
launch call a CUPTI runtime row, each kernel, copy, set and stream wait a CUPTI activity row. Only the tables
and columns gpusim reads are written, named and typed as in Nsight Systems' export schema.

gpusim's tests replay the result against the Kineto trace it came from (tests/replay/).
No nsys was at hand where the traces were recorded; this is how the reader is tested.

  python3 tests/replay/make_nsys_fixture.py TRACE.json.gz OUT.sqlite
"""
import gzip
import json
import sqlite3
import sys

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, smCount INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
  cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
"""


def ns(us):
    return int(round(float(us) * 1000))


def sizes_text(dims):
    """PyTorch's shapesToStr over inputSizes(fn, flatten_list_enabled=true): a tensor list's
    tensors each take an entry; anything else that is not a tensor, []."""
    out = []
    for d in dims:
        if d and isinstance(d[0], list):
            out.extend(d)
        else:
            out.append(d)
    return "[" + ", ".join("[" + ", ".join(str(x) for x in t) + "]" for t in out) + "]"


def main(src, dst):
    trace = json.load(gzip.open(src) if src.endswith(".gz") else open(src))
    db = sqlite3.connect(dst)
    db.executescript(SCHEMA)
    strings = {}

    def sid(text):
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]

    name = (trace.get("deviceProperties") or [{}])[0].get("name", "")
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, ?, 132)", (name,))
    seq = 0
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat"), e.get("args", {})
        start, end = ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0))
        if cat == "cpu_op":
            text = f"{e['name']}, seq = {seq}, op_id = {a.get('External id', 0)}"
            seq += 1
            if a.get("Input Dims"):
                text += ", sizes = " + sizes_text(a["Input Dims"])
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?, ?, 59, ?, ?, 0)",
                       (start, end, text, e.get("tid", 0)))
        elif cat in ("cuda_runtime", "cuda_driver"):
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)",
                       (start, end, e.get("tid", 0), a.get("correlation", -1), sid(e["name"])))
        elif cat == "kernel":
            g, b = a.get("grid", [1, 1, 1]), a.get("block", [1, 1, 1])
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, 1, ?, ?, NULL, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, NULL, NULL, NULL)",
                       (start, end, a.get("stream", 7), a.get("correlation", -1), sid(e["name"]), sid(e["name"].split("(")[0]),
                        a.get("registers per thread", 0), *g, *b, a.get("shared memory", 0)))
        elif cat == "gpu_memcpy":
            kind = 8 if "DtoD" in e["name"] else 1 if "HtoD" in e["name"] else 2 if "DtoH" in e["name"] else 0
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, ?, ?, 1, ?, ?)",
                       (start, end, a.get("stream", 7), a.get("correlation", -1), a.get("bytes", 0), kind))
        elif cat == "cuda_sync" and a.get("cuda_sync_kind") in ("Stream Wait Event", "Context Sync"):
            kind = 2 if a["cuda_sync_kind"] == "Stream Wait Event" else 4
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, ?, ?, 1, ?, ?)",
                       (start, end, a.get("stream", -1), a.get("correlation", -1), kind, a.get("wait_on_cuda_event_id", -1)))
        elif cat == "gpu_memset":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, 0, 1, ?, ?, 1, 0, ?)",
                       (start, end, a.get("stream", 7), a.get("correlation", -1), a.get("bytes", 0)))
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

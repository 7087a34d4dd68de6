// Ordering between streams: which earlier op instances on other streams each op instance must
// wait for, from the synchronizations the trace recorded (replay/profiler_trace.h RecordedSync).
#pragma once

#include <cstddef>
#include <vector>

#include "replay/kernel_mapping.h"
#include "replay/profiler_trace.h"

namespace gpusim::replay {

// Per group (of map_trace's), the earlier groups it waits for. A stream's wait on an event makes
// the waiting stream's next op instance wait for the work launched before the call on the stream
// the event was recorded on. Traces do not name that stream, so every other stream's last op
// instance launched before the call is a candidate, kept when the recording shows it had ended
// before the waiting instance started (the waited stream's always had; another's is kept only
// when the recording allows it). A device synchronization orders every stream the same way.
// Groups without recorded launch times get none.
std::vector<std::vector<std::size_t>> cross_stream_waits(const RecordedTrace& trace, const std::vector<MappedGroup>& groups);

}  // namespace gpusim::replay

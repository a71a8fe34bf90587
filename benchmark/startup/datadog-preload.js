'use strict';
// The @datadog/pprof counterpart of `-r heap-labels/register` in the start-up benchmark (startup.js):
// a preload that starts @datadog/pprof's heap profiler as its users start it (dd-trace's and other
// agents' default: every 512 KiB, stack depth 64). Only the library and its profiler: no agent of
// a vendor, no exporter.
require('@datadog/pprof').heap.start(512 * 1024, 64);

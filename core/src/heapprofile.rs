//! Chrome DevTools `.heapprofile` output (CDP `HeapProfiler.SamplingHeapProfile`).

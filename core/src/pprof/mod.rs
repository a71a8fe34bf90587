//! pprof output: gzip-compressed `profile.proto`.

pub mod proto;

//! CRC-32 of bytes, for the package's JS readers of files it wrote itself (the preload's code
//! cache, lib/code-cache.js): the same check in JS would cost more than the cache saves.

use napi::bindgen_prelude::Uint8ArraySlice;
use napi_derive::napi;

/// CRC-32 (IEEE 802.3) of `data`, a Buffer or Uint8Array.
#[napi]
pub fn crc32(data: Uint8ArraySlice) -> u32 {
    crc32fast::hash(&data)
}

#[cfg(test)]
mod tests {
    // The check value of CRC-32/ISO-HDLC, the CRC lib/code-cache.js relies on.
    #[test]
    fn crc32_is_the_ieee_crc() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
    }
}

//! Feeds arbitrary bytes, cut into frames, to the vNIC frame checks and the LRO coalescer.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vnetlab::fuzzing::frames(data);
});

//! Feeds arbitrary bytes to the VDI session's message reader, as a hostile peer would send them.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vnetlab::fuzzing::vdi_messages(data);
});

//! Feeds arbitrary text to every parser vnetlab wrote: none may panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vnetlab::fuzzing::all_text_parsers(data);
});

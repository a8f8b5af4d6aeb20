//! VDI sessions: the protocol engine's traffic to each desktop's client (screen frames paced at
//! a profile's rate, back-pressured by acknowledgements) and the client's input events and USB,
//! measured as a user feels them: delivered frames/s, frame delay, input-to-screen latency.

pub mod pace;
pub mod profile;
pub mod result;
pub mod session;
pub mod wire;

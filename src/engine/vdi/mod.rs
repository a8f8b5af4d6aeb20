//! VDI sessions: the protocol engine's traffic to each desktop's client (screen frames paced at
//! a profile's rate, back-pressured by acknowledgements) and the client's input events and USB,
//! measured as a user feels them: delivered frames/s, frame delay, input-to-screen latency.
//!
//! These are the sessions' parts, below the test's spec that carries a profile: what a desktop's
//! session sends (`profile`), its messages on the connection (`wire`) and its arithmetic apart
//! from sockets (`pace`). The sessions themselves run beside the other data loops
//! (`engine::vdi_session`), and both sides' reports become the result there too
//! (`engine::vdi_result`).

pub mod pace;
pub mod profile;
pub mod wire;

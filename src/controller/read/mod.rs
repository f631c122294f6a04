//! The shell's reads from the API server: what the decision needs (gather, with what taking
//! over needs in take_over), and what the core asks to look at after the act (observe).

mod by_name;
mod gather;
mod observe;
mod server;
mod take_over;

pub(in crate::controller) use gather::gather;
pub(in crate::controller) use observe::look;

//! The shell's reads from the API server: what the decision needs (gather, with what taking
//! over needs in take_over), and what the core asks to look at after the act (observe).

pub(in crate::controller) mod by_name;
pub(in crate::controller) mod gather;
pub(in crate::controller) mod observe;
pub(in crate::controller) mod server;
pub(in crate::controller) mod take_over;

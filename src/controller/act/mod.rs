//! The shell's writes: what taking over decided (take_over), then the decision's objects in
//! dependency order (apply, how each kind is written: write), a move in place handed over
//! first (hand_over), old revisions pruned (prune), hand edits found (drift).

pub(in crate::controller) mod apply;
pub(in crate::controller) mod drift;
pub(in crate::controller) mod hand_over;
pub(in crate::controller) mod prune;
pub(in crate::controller) mod take_over;
pub(in crate::controller) mod write;

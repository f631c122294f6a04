//! llama-stack-operator: deploys and runs llama-stack servers from `LlamaStackDistribution`
//! resources.

pub mod api;
pub mod cli;
pub mod config;
pub mod controller;
pub mod convert;
pub mod external;
pub mod leader;
pub mod metrics;
pub mod webhook;

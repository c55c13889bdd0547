//! The network: the embedded receiver that captures deliveries, and the outbound client that
//! resends, forwards and probes the developer's own handler.

pub mod client;
pub mod probe;
pub mod receiver;
pub mod reconcile;
pub mod relay;
pub mod simulator;

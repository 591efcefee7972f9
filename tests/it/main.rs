//! The black-box tests of sliced, one module per area, all in one test binary so that the
//! helpers in `common` are compiled and linked once.
//!
//! Run one area with its module name as the filter: `cargo test --test it http_api::`.

mod common;

mod applies;
mod audit;
mod auth;
mod auth_proxy;
mod cli;
mod cluster;
mod controller;
mod daemon;
mod docs;
mod etcd_foreign;
mod etcd_locked;
mod etcd_tool;
mod events;
mod health;
mod hostile_network;
mod http_api;
mod manuals;
mod metrics;
mod oidc;
mod openapi;
mod openflow_tls;
mod pipeline;
mod service;
mod start_up;
mod tidy;
mod ui;
mod verification;
mod web_security;

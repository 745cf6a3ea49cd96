//! The checker's rules that change the runtime state and that both the executor and the
//! entry points apply: task completion and release ([`task`]), the model rules ([`model`]).
//! (`crate::extra` holds the rules of the functions beyond the seeds, S6 and P5.)
//!
//! Layer: rules, above the plain data (`state`, `model`, `errmsg`, `calls`, `pt`, `trace`)
//! and below the executor (`exec`) and the entry points (`api`): it may import only the
//! layers below and itself.

pub(crate) mod dvpp;
pub(crate) mod model;
pub(crate) mod task;

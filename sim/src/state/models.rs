//! The runtime's model objects (MD1-MD13): loaded models, descriptions, datasets, data
//! buffers, the executions issued and not done, and the body of an execution ([`Run`]).
//!
//! Layer: plain data (part of `state`); imports `state` and the model format (`model`),
//! nothing above. The rules that change these objects are in `rules::model`, the entry
//! points in `api::model`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::model::Model;
use crate::state::{DATABUF_BASE, DATASET_BASE, DESC_BASE, handle};

/// Everything the runtime knows about models.
#[derive(Default)]
pub struct Models {
    pub loaded: BTreeMap<u32, Loaded>,
    pub descs: HashMap<u64, Desc>,
    pub datasets: HashMap<u64, Dataset>,
    pub bufs: HashMap<u64, DataBuf>,
    /// Executions issued and not done (asynchronous or synchronous): the memory each reads
    /// and writes (MD6), whether its body is running (MD2, MD6).
    pub execs: BTreeMap<u64, ExecUse>,
    /// Recently destroyed descriptions, datasets and data buffers: id -> kind (MD5). Ids are
    /// never reused, so a handle found here was destroyed, never merely invalid; bounded
    /// (`TOMBS`): a use of one forgotten is only "unknown" (100000, no finding).
    pub tombs: BTreeMap<u64, &'static str>,
}

/// What a pending execution uses (MD6).
pub struct ExecUse {
    pub model_id: u32,
    /// Its stream; `None` for a synchronous `aclmdlExecute`.
    pub stream: Option<u64>,
    /// (address, bytes) the execution reads: the data inputs and the dynamic-batch buffer.
    pub inputs: Vec<(usize, usize)>,
    /// (address, bytes) it writes: the outputs.
    pub outputs: Vec<(usize, usize)>,
    /// Its body is running now (not only issued).
    pub running: bool,
    /// MD8 was reported for it (once).
    pub md8_reported: bool,
}

/// Memory a loaded model holds until unload (MD2 work / weight, MD3 model bytes).
pub struct Region {
    /// The tracked allocation it lies in (its start).
    pub alloc: usize,
    pub start: usize,
    pub len: usize,
    /// "work memory", "weight memory" or "model bytes".
    pub what: &'static str,
    /// The rule a free or a write breaks: "MD2" or "MD3".
    pub rule: &'static str,
}

pub struct Loaded {
    pub model: Arc<Model>,
    /// MD1: the context the model was loaded in.
    pub ctx: u64,
    /// Executions issued and not done: execution id (the task id of an asynchronous one) ->
    /// its stream (`None`: a synchronous `aclmdlExecute`). MD7, MD8.
    pub pending: BTreeMap<u64, Option<u64>>,
    /// MD12: the last batch set on any dataset of the model.
    pub cur_batch: Option<u64>,
    /// Tracked memory the model holds until unload (MD2 work/weight, MD3 model bytes): a
    /// free or a write breaks the region's rule.
    pub regions: Vec<Region>,
    /// Work and weight memory the runtime allocated at load (no `...WithMem`): (device,
    /// bytes) counted against that device's memory until unload (D8).
    pub memory: Option<(i32, u64)>,
}

pub struct Desc {
    /// The model `aclmdlGetDesc` filled it from.
    pub model: Option<u32>,
}

pub struct Dataset {
    pub bufs: Vec<u64>,
    /// The batch `aclmdlSetDynamicBatchSize` set, and for which model (MD11).
    pub batch: Option<(u32, u64)>,
    /// Pending executions using it (MD6).
    pub uses: u32,
    pub destroyed: bool,
}

pub struct DataBuf {
    pub data: usize,
    pub size: usize,
    pub uses: u32,
    pub destroyed: bool,
}

impl Models {
    pub fn live_count(&self) -> usize {
        self.loaded.len()
            + self.descs.len()
            + self.datasets.values().filter(|d| !d.destroyed).count()
            + self.bufs.values().filter(|b| !b.destroyed).count()
    }

    /// The leak report's lines (P2).
    pub fn describe_live(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .loaded
            .keys()
            .map(|id| format!("model {id} (loaded, never unloaded)"))
            .collect();
        let mut sorted = |kind: &str, base: usize, ids: Vec<u64>| {
            let mut ids = ids;
            ids.sort_unstable();
            v.extend(
                ids.iter()
                    .map(|id| format!("{kind} {:#x}", handle(base, *id))),
            );
        };
        sorted(
            "model description",
            DESC_BASE,
            self.descs.keys().copied().collect(),
        );
        sorted(
            "dataset",
            DATASET_BASE,
            self.datasets
                .iter()
                .filter(|(_, d)| !d.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        sorted(
            "data buffer",
            DATABUF_BASE,
            self.bufs
                .iter()
                .filter(|(_, b)| !b.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        v
    }
}

/// One execution: what it holds and what it computes.
pub struct Exec {
    pub model_id: u32,
    pub model: Arc<Model>,
    pub datasets: [u64; 2],
    pub bufs: Vec<u64>,
    /// (address, bytes) of the data inputs and of the outputs, in the model's order.
    pub inputs: Vec<(usize, usize)>,
    pub outputs: Vec<(usize, usize)>,
    /// The batch at issue: the one set on the input dataset, or the largest gear (MD11).
    pub batch: u64,
    /// The dynamic-batch buffer (8 bytes) when a batch was set on the input dataset: the
    /// execution reads its batch there when it runs, as it reads its input.
    pub batch_at: Option<usize>,
}

/// The body of an execution, run without the lock by a stream worker.
pub struct Run {
    model: Arc<Model>,
    inputs: Vec<(usize, usize)>,
    outputs: Vec<(usize, usize)>,
    batch: u64,
    batch_at: Option<usize>,
}

impl Exec {
    pub fn run(&self) -> Run {
        Run {
            model: self.model.clone(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            batch: self.batch,
            batch_at: self.batch_at,
        }
    }

    /// What it reads and writes (MD6).
    pub(crate) fn uses(&self, stream: Option<u64>) -> ExecUse {
        let mut inputs = self.inputs.clone();
        inputs.extend(self.batch_at.map(|a| (a, 8)));
        ExecUse {
            model_id: self.model_id,
            stream,
            inputs,
            outputs: self.outputs.clone(),
            running: false,
            md8_reported: false,
        }
    }
}

impl Run {
    /// The batch, read when the execution starts, then the model's time (`time` µs per
    /// batch item), then its evaluation. Run by a stream worker without the lock: the
    /// memory is held by the task (M2) and a teardown joins the worker before freeing it.
    pub fn run(self) {
        let batch = self.batch();
        self.sleep(batch);
        let input = self.read_input();
        let output = self.compute(&input, batch);
        self.write_output(&output);
    }

    /// The batch this execution runs with: what the dynamic-batch buffer holds now (the
    /// device reads it when the execution starts; `aclmdlSetDynamicBatchSize` wrote it),
    /// or the batch of the issue if that memory holds no gear any more.
    pub(crate) fn batch(&self) -> u64 {
        let Some(at) = self.batch_at else {
            return self.batch;
        };
        let mut b = [0u8; 8];
        // SAFETY: 8 bytes validated at issue inside a live device allocation (MD9), kept
        // alive by its use count (M2) until this execution is done.
        unsafe { std::ptr::copy(at as *const u8, b.as_mut_ptr(), 8) };
        let v = u64::from_ne_bytes(b);
        if self.model.gears.contains(&v) {
            v
        } else {
            self.batch
        }
    }

    pub(crate) fn sleep(&self, batch: u64) {
        let us = self.model.time_us.saturating_mul(batch);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
    }

    /// Copies of the input buffers.
    pub(crate) fn read_input(&self) -> Vec<Vec<u8>> {
        self.inputs
            .iter()
            .map(|&(at, len)| {
                let mut input = vec![0u8; len];
                // SAFETY: validated at issue (MD9): each input lies in a live device
                // allocation, kept alive by its use count (M2) until this execution is done,
                // and not freed by a teardown meanwhile (a stream worker is joined first; a
                // synchronous execution pins it, `exec::pinned`).
                unsafe { std::ptr::copy(at as *const u8, input.as_mut_ptr(), len) };
                input
            })
            .collect()
    }

    /// The evaluation, on copies: touches no runtime memory.
    pub(crate) fn compute(&self, inputs: &[Vec<u8>], batch: u64) -> Vec<Vec<u8>> {
        let mut outputs: Vec<Vec<u8>> = self
            .outputs
            .iter()
            .map(|&(_, len)| vec![0u8; len])
            .collect();
        self.model.eval(inputs, batch, &mut outputs);
        outputs
    }

    pub(crate) fn write_output(&self, outputs: &[Vec<u8>]) {
        for (&(at, len), output) in self.outputs.iter().zip(outputs) {
            // SAFETY: as for the inputs (each output range was validated the same way);
            // `output` holds `len` bytes (made by `compute`).
            unsafe { std::ptr::copy(output.as_ptr(), at as *mut u8, len.min(output.len())) };
        }
    }
}

//! Models in the simulator's own text format (`aclsim-model 1`): [`SimModel`] writes them,
//! for tests and examples that run models without an NPU.

/// The element type of a simulated model's input or output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimDtype {
    /// `f32`.
    F32,
    /// `u8` (results rounded and saturated).
    U8,
    /// `i32` (results rounded and saturated).
    I32,
    /// `float16` (read and written through [`F16`](crate::F16); results rounded to nearest).
    F16,
    /// `bfloat16` (read and written through [`BF16`](crate::BF16); results rounded to
    /// nearest).
    BF16,
}

impl SimDtype {
    fn name(self) -> &'static str {
        match self {
            SimDtype::F32 => "f32",
            SimDtype::U8 => "u8",
            SimDtype::I32 => "i32",
            SimDtype::F16 => "f16",
            SimDtype::BF16 => "bf16",
        }
    }
}

/// A model in the simulator's own text format (`aclsim-model 1`, specified in
/// `sim/README.md`), for tests and examples that run models without an NPU: one or more
/// inputs and outputs, optional batch gears, and a few CPU operations. The simulator loads it with the
/// same calls as a real `.om` ([`Context::load_model`](crate::Context::load_model)); the
/// vendor runtime refuses it.
///
/// ```
/// use ascend_typestate::simulator::{SimDtype, SimModel};
/// // A 3-class linear classifier over 4 features: scores = x·W + b.
/// let model = SimModel::new(SimDtype::F32, &[1, 4], SimDtype::F32, &[1, 3])
///     .matmul(4, 3, &[1.0; 12])
///     .bias(&[0.0, 0.5, -0.5]);
/// assert!(model.to_text().starts_with("aclsim-model 1\n"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SimModel {
    inputs: Vec<(SimDtype, Vec<usize>)>,
    outputs: Vec<(SimDtype, Vec<usize>)>,
    gears: Vec<u64>,
    micros_per_item: u64,
    ops: Vec<String>,
}

impl SimModel {
    /// A model with one input and one output of these types and dimensions (for a dynamic
    /// model, the first dimension is the largest gear's batch). Without operations it copies
    /// (converts) its input.
    pub fn new(
        input: SimDtype,
        input_dims: &[usize],
        output: SimDtype,
        output_dims: &[usize],
    ) -> SimModel {
        SimModel {
            inputs: vec![(input, input_dims.to_vec())],
            outputs: vec![(output, output_dims.to_vec())],
            gears: Vec::new(),
            micros_per_item: 0,
            ops: Vec::new(),
        }
    }

    /// Another input, after the others (at most 16). The model's operations see the values
    /// of all inputs, converted to `f32` and concatenated in order (`sim/README.md`).
    pub fn and_input(mut self, dtype: SimDtype, dims: &[usize]) -> SimModel {
        self.inputs.push((dtype, dims.to_vec()));
        self
    }

    /// Another output, after the others (at most 16). The operations' values fill the
    /// outputs in order, each converted to its type.
    pub fn and_output(mut self, dtype: SimDtype, dims: &[usize]) -> SimModel {
        self.outputs.push((dtype, dims.to_vec()));
        self
    }

    /// Dynamic batch gears (ascending): the model gets the extra input
    /// [`DYNAMIC_BATCH_INPUT`](crate::DYNAMIC_BATCH_INPUT).
    pub fn batch_gears(mut self, gears: &[u64]) -> SimModel {
        self.gears = gears.to_vec();
        self
    }

    /// How long an execution takes per batch item.
    pub fn time_per_item(mut self, time: std::time::Duration) -> SimModel {
        self.micros_per_item = u64::try_from(time.as_micros()).unwrap_or(u64::MAX);
        self
    }

    /// x ← a·x.
    pub fn scale(mut self, a: f32) -> SimModel {
        self.ops.push(format!("op scale {a:?}"));
        self
    }

    /// x ← x + b.
    pub fn offset(mut self, b: f32) -> SimModel {
        self.ops.push(format!("op add {b:?}"));
        self
    }

    /// x ← max(x, 0).
    pub fn relu(mut self) -> SimModel {
        self.ops.push("op relu".to_owned());
        self
    }

    /// Rows of `rows` values become rows of `cols`: x·W, `weights` row-major `rows × cols`.
    pub fn matmul(mut self, rows: usize, cols: usize, weights: &[f32]) -> SimModel {
        let mut op = format!("op matmul {rows} {cols}");
        for w in weights {
            op.push_str(&format!(" {w:?}"));
        }
        self.ops.push(op);
        self
    }

    /// Adds `bias` to every row of `bias.len()` values.
    pub fn bias(mut self, bias: &[f32]) -> SimModel {
        let mut op = format!("op bias {}", bias.len());
        for b in bias {
            op.push_str(&format!(" {b:?}"));
        }
        self.ops.push(op);
        self
    }

    /// Each row of `cols` values becomes the index of its largest value.
    pub fn argmax(mut self, cols: usize) -> SimModel {
        self.ops.push(format!("op argmax {cols}"));
        self
    }

    /// The model file's text.
    pub fn to_text(&self) -> String {
        let dims = |d: &[usize]| d.iter().map(usize::to_string).collect::<Vec<_>>().join("x");
        let mut text =
            String::from("aclsim-model 1\n# written by ascend_typestate::simulator::SimModel\n");
        // The first input is `data`, the next `data1`, ...; the outputs `result`, `result1`.
        let suffix = |i: usize| if i == 0 { String::new() } else { i.to_string() };
        for (i, (dtype, d)) in self.inputs.iter().enumerate() {
            let line = format!("input data{} {} {}\n", suffix(i), dtype.name(), dims(d));
            text.push_str(&line);
        }
        for (i, (dtype, d)) in self.outputs.iter().enumerate() {
            let line = format!("output result{} {} {}\n", suffix(i), dtype.name(), dims(d));
            text.push_str(&line);
        }
        if !self.gears.is_empty() {
            let gears: Vec<String> = self.gears.iter().map(u64::to_string).collect();
            text.push_str(&format!("batch {}\n", gears.join(" ")));
        }
        if self.micros_per_item > 0 {
            text.push_str(&format!("time {}\n", self.micros_per_item));
        }
        for op in &self.ops {
            text.push_str(op);
            text.push('\n');
        }
        text
    }

    /// Writes the model file.
    pub fn write(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_text())
    }
}

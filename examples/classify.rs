//! Image classification with a model: load it once, allocate everything once, then run frames
//! double-buffered with asynchronous execution (`aclmdlExecuteAsync` in a [`Pipeline`]),
//! printing each frame's top-1 class and the frames per second.
//!
//! On the simulator it runs out of the box: it writes a tiny classifier in the simulator's
//! model format (`SimModel`: 64 features, 10 classes) and checks every result against the
//! same computation on the CPU. On an Atlas 200I/500 A2 board, give it a real `.om` whose
//! single input is `f32` and single output holds `f32` scores (README: "Running a model on
//! the board" shows how to make one with ATC from ONNX). The element types come from the
//! model's description and are checked against the pipeline's `f32`s (MD13): a `float16`
//! model is refused at its first frame (`Error::ModelTypeMismatch`), not fed garbage.
//!
//! ```sh
//! cargo run --release --example classify                    # the simulator, 1000 frames
//! cargo run --release --example classify -- resnet50.om 200 # a real model, 200 frames
//! ```
//!
//! The input of each frame is synthetic (a real application fills `slot.input_mut()` from
//! its camera or decoder). While frame *n*'s scores are copied back, frame *n + 1* is already
//! uploaded and executing; nothing drains between frames, and the loop creates nothing.
//!
//! [`Pipeline`]: ascend_typestate::Pipeline

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{Acl, DefaultContext, Device, Error, Model, Pipeline, PipelineConfig};

const FEATURES: usize = 64;
const CLASSES: usize = 10;

/// The simulated classifier's weights: class `c` responds to features `i` with `i % CLASSES
/// == c`.
fn weights() -> Vec<f32> {
    (0..FEATURES * CLASSES)
        .map(|k| {
            let (i, c) = (k / CLASSES, k % CLASSES);
            if i % CLASSES == c { 1.0 } else { -0.1 }
        })
        .collect()
}

/// Frame `n`'s input: emphasises class `n * 7 % CLASSES`.
fn fill(n: u64, input: &mut [f32]) {
    let hot = (n * 7 % CLASSES as u64) as usize;
    for (i, x) in input.iter_mut().enumerate() {
        *x = if i % CLASSES == hot { 1.0 } else { 0.25 };
    }
}

/// The index and value of the largest score.
fn top1(scores: &[f32]) -> (usize, f32) {
    scores
        .iter()
        .copied()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, s)| {
            if s > best.1 { (i, s) } else { best }
        })
}

/// Counts frame `n`'s top-1 class, and prints it with `--each`; on the simulator, checks it.
fn report(n: u64, scores: &[f32], classifier: &mut Tally, out: &mut impl Write) {
    let (class, score) = top1(scores);
    if classifier.each {
        let _ = writeln!(out, "frame {n}: class {class} ({score:.3})");
    }
    if classifier.check {
        assert_eq!(class as u64, n * 7 % CLASSES as u64, "frame {n}");
    }
    if let Some(count) = classifier.per_class.get_mut(class) {
        *count += 1;
    }
    classifier.results += 1;
}

/// What the loop saw, for the summary.
struct Tally {
    /// On the simulator: check each result against the CPU.
    check: bool,
    /// Print every frame's class (`--each`), not only the summary.
    each: bool,
    results: u64,
    per_class: Vec<u64>,
}

/// Everything the loop uses, created at start-up.
struct Classifier {
    model: Model<'static>,
    pipeline: Pipeline<'static, f32, f32>,
    tally: Tally,
}

impl Classifier {
    fn new(
        device: &'static Device<'static, DefaultContext>,
        path: &std::path::Path,
        tally: Tally,
    ) -> Result<Classifier, Error> {
        let model = device.load_model(path)?;
        let (input, output) = match (model.inputs(), model.outputs()) {
            ([input], [output]) => (input.byte_len(), output.byte_len()),
            _ => {
                return Err(Error::InvalidArgument(
                    "this example runs models with one input and one output",
                ));
            }
        };
        let config = PipelineConfig::new(input / 4, output / 4).slots(2);
        Ok(Classifier {
            pipeline: device.create_pipeline(config)?,
            model,
            tally,
        })
    }

    /// One frame: the oldest slot (its last frame proven done), its result, the new input,
    /// the execution.
    fn frame(&mut self, out: &mut impl Write) -> Result<(), Error> {
        let mut slot = self.pipeline.next_slot()?;
        if let Some((n, scores)) = slot.output() {
            report(n, scores, &mut self.tally, out);
        }
        fill(slot.frame(), slot.input_mut());
        let model = &mut self.model;
        slot.submit(|launch| launch.execute(model))?;
        Ok(())
    }

    /// The last frames, then everything released: the pipeline first (its frames are then
    /// proven done), then the model.
    fn finish(mut self, out: &mut impl Write) -> Result<Tally, Error> {
        self.pipeline.wait_all()?;
        for (n, scores) in self.pipeline.outputs() {
            report(n, scores, &mut self.tally, out);
        }
        self.pipeline.destroy()?;
        self.model.unload()?;
        Ok(self.tally)
    }
}

fn main() -> Result<(), Error> {
    // `classify [MODEL.om [FRAMES]] [--each]`: a summary, or every frame's class with `--each`.
    let (flags, mut args): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a.starts_with("--"));
    let each = flags.iter().any(|f| f == "--each");
    args.reverse();
    let model_arg = args.pop();
    let frames: u64 = args.pop().and_then(|n| n.parse().ok()).unwrap_or(1000);

    let acl = Acl::shared()?;
    println!("runtime library: {}", acl.library());
    let simulated = acl.simulator().is_some();
    let path = match (model_arg, simulated) {
        (Some(path), _) => PathBuf::from(path),
        (None, true) => {
            let path = std::env::temp_dir().join(format!("classify-{}.model", std::process::id()));
            SimModel::new(SimDtype::F32, &[1, FEATURES], SimDtype::F32, &[1, CLASSES])
                .matmul(FEATURES, CLASSES, &weights())
                .time_per_item(Duration::from_micros(300))
                .write(&path)
                .map_err(|_| Error::InvalidArgument("cannot write the simulated model"))?;
            path
        }
        (None, false) => {
            println!(
                "usage: classify MODEL.om [FRAMES] [--each]  (on the simulator, no model is needed)"
            );
            return Ok(());
        }
    };
    let check = simulated && path.extension().is_some_and(|e| e == "model");

    // Initialised once, kept for the program's life: the device in its default context.
    let device: &'static Device<'static, DefaultContext> =
        Box::leak(Box::new(acl.set_device(0)?.into_default_context()?));
    let tally = Tally {
        check,
        each,
        results: 0,
        per_class: Vec::new(),
    };
    let mut classifier = Classifier::new(device, &path, tally)?;
    let classes = classifier.model.outputs()[0].byte_len() / 4;
    classifier.tally.per_class = vec![0; classes];
    let (input, output) = (
        &classifier.model.inputs()[0],
        &classifier.model.outputs()[0],
    );
    println!(
        "model {}: input {:?} {}, output {:?} {}",
        path.display(),
        input.dims(),
        input.data_type(),
        output.dims(),
        output.data_type()
    );

    let started = Instant::now();
    let tally = std::thread::spawn(move || -> Result<Tally, Error> {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        for _ in 0..frames {
            classifier.frame(&mut out)?;
        }
        classifier.finish(&mut out)
    })
    .join()
    .map_err(|_| Error::InvalidArgument("the classifier thread panicked"))??;
    let elapsed = started.elapsed();
    let results = tally.results;
    println!("frames per top-1 class: {:?}", tally.per_class);
    println!(
        "{results} frames in {:.1} ms: {:.0} frames/s{}",
        elapsed.as_secs_f64() * 1e3,
        results as f64 / elapsed.as_secs_f64(),
        if check { "; every top-1 checked" } else { "" }
    );
    if let Some(sim) = acl.simulator() {
        println!("simulator findings: {}", sim.findings().len());
        if check {
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}

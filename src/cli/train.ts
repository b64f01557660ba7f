// `theanine train mnist`: trains one of the example models on the MNIST digits and prints the
// held-out accuracy. Backend and device default to Keras' configuration (keras.json, then
// KERAS_BACKEND / THEANINE_DEVICE), as K.function's do; the flags override them. The first line
// says what runs. Progress as Keras' fit() shows it (progress.ts): a bar per epoch on an
// interactive terminal, one line per epoch otherwise.
import { Command, Option } from 'commander';
import cliProgress from 'cli-progress';
import {
  backend as K,
  configuredTarget,
  describeTarget,
  GPU_MODE_CHOICES,
  set_backend,
  setEnvironment,
  setWarningSink,
  type BackendName,
  type DeviceName,
  type WarningSink,
} from '../index.js';
import { loadMnist, take } from '../examples/mnist.js';
import { MODELS, type ModelName } from '../examples/models.js';
import { trainMnist, type EpochStats } from '../examples/train.js';
import { CliError, type Io, type ProgressStream } from './io.js';
import { nameFromPath } from './export.js';
import { nonNegativeInt, nonNegativeNumber, positiveInt, positiveNumber } from './numbers.js';
import { epochBar, epochLine, progressLine } from './progress.js';

/** Defaults per model, chosen so a default run takes about a minute on 2 cores. */
export const DEFAULTS: Readonly<Record<ModelName, { epochs: number; batchSize: number; lr: number; decay: number }>> = {
  mlp: { epochs: 5, batchSize: 16, lr: 0.002, decay: 0.001 },
  cnn: { epochs: 3, batchSize: 64, lr: 0.003, decay: 0.001 },
  lstm: { epochs: 6, batchSize: 32, lr: 0.005, decay: 0.005 },
};

interface TrainFlags {
  model: ModelName;
  epochs?: number;
  batchSize?: number;
  lr?: number;
  decay?: number;
  seed: number;
  device?: DeviceName;
  gpuMode?: string;
  backend?: BackendName;
  limit?: number;
  data?: string;
  unroll: boolean;
  export?: string;
  exportBatch: number;
}

const fmt = (v: number, d: number) => v.toFixed(d);

export function trainCommand(io: Io): Command {
  return new Command('train')
    .description('train a model on the MNIST digits shipped in the mnist package and report held-out accuracy')
    .addArgument(new Command().createArgument('<dataset>', 'the data set').choices(['mnist']))
    .addOption(new Option('--model <name>', 'model').choices(MODELS).default('mlp'))
    .option('--epochs <n>', 'passes over the training digits (default: per model)', positiveInt)
    .option('--batch-size <n>', 'examples per Adam step (default: per model)', positiveInt)
    .option('--lr <x>', 'Adam learning rate (default: per model)', positiveNumber)
    .option('--decay <x>', "learning-rate decay per step, Keras' Adam `decay` (default: per model)", nonNegativeNumber)
    .option('--seed <n>', 'seed for initial weights and batch order', nonNegativeInt, 1)
    .addOption(
      new Option(
        '--device <name>',
        'device for the compiled functions (default: THEANINE_DEVICE, else "device" in keras.json, else cpu)',
      ).choices(['cpu', 'gpu']),
    )
    .addOption(
      new Option(
        '--gpu-mode <mode>',
        'the gpu device\'s mode (default: THEANINE_GPU_MODE, else "gpu_mode" in keras.json, else gpu.js\' best)',
      ).choices(GPU_MODE_CHOICES),
    )
    .addOption(
      new Option(
        '--backend <name>',
        'Keras backend (default: KERAS_BACKEND, else "backend" in keras.json, else theanine)',
      ).choices(['theanine', 'tensorflow', 'onnx']),
    )
    .option(
      '--unroll',
      "lstm: unroll K.rnn's 28 steps (Keras' unroll=True) instead of one Scan node (Keras' default)",
      false,
    )
    .option('--limit <n>', 'train on the first n training digits only (quick runs)', positiveInt)
    .option('--data <dir>', 'folder with 0.json ... 9.json in the mnist package format (default: the mnist package)')
    .option('--export <file>', 'after training, write the classifier as a standalone TypeScript module (exportModule)')
    .option('--export-batch <n>', 'images per call of the exported classifier', positiveInt, 1)
    .action((_dataset: string, flags: TrainFlags) => {
      runTrain(io, flags);
    });
}

/** Trains with the chosen backend selected (set_backend), restoring the previous one afterwards. */
function runTrain(io: Io, f: TrainFlags): void {
  // The configured backend and device come from keras.json and the environment (a bad value is an error naming it).
  const backend = f.backend ?? configuredTarget().backend;
  const device = f.device ?? configuredTarget().device;
  if (backend === 'tensorflow' && f.device === 'gpu') {
    throw new CliError(
      '--device gpu is a device of the theanine backend; the tensorflow backend runs where TensorFlow.js does (THEANINE_TFJS_BACKEND=node|wasm|cpu picks its flavour)',
    );
  }
  if (f.gpuMode !== undefined && device !== 'gpu') {
    throw new CliError(
      `--gpu-mode ${f.gpuMode} is a mode of the gpu device; add --device gpu (the device here is ${device})`,
    );
  }
  const before = K.backend();
  set_backend(backend);
  // --gpu-mode wins over THEANINE_GPU_MODE and keras.json for this run (setEnvironment: the switch K.function reads)
  if (f.gpuMode !== undefined) setEnvironment({ THEANINE_GPU_MODE: f.gpuMode });
  try {
    io.out(`${describeTarget(backend, device)}\n`);
    trainWith(io, f, device);
  } finally {
    set_backend(before);
    if (f.gpuMode !== undefined) setEnvironment({ THEANINE_GPU_MODE: undefined });
  }
}

function trainWith(io: Io, f: TrainFlags, device: DeviceName): void {
  const d = DEFAULTS[f.model];
  const opts = {
    model: f.model,
    epochs: f.epochs ?? d.epochs,
    batchSize: f.batchSize ?? d.batchSize,
    lr: f.lr ?? d.lr,
    decay: f.decay ?? d.decay,
    seed: f.seed,
    device,
    unroll: f.unroll,
  };
  const full = loadMnist(f.data);
  const data = f.limit === undefined ? full : { ...full, train: take(full.train, f.limit) };
  io.out(
    `mnist: ${data.train.count} training digits, ${data.test.count} held-out digits for validation and the test (${data.source})\n`,
  );
  io.out(
    `model ${opts.model}; adam lr ${opts.lr}, decay ${opts.decay}, batch ${opts.batchSize}, ${opts.epochs} epoch${opts.epochs === 1 ? '' : 's'}, seed ${opts.seed}\n`,
  );

  const progress = io.tty ? new Progress(io.progress ?? process.stderr) : undefined;
  let batches = 0;
  let result: ReturnType<typeof trainMnist>;
  try {
    result = trainMnist(data, opts, {
      onEpochStart: (epoch, n) => {
        batches = n;
        progress?.start(`Epoch ${epoch}/${opts.epochs}`, n);
      },
      onBatch: (b) => progress?.update(progressLine(b)),
      onEpochEnd: (s: EpochStats) => {
        progress?.keep(epochBar(s, batches));
        // On one terminal the kept bar is the epoch's record; stdout elsewhere gets the line.
        if (progress === undefined || io.outTty !== true) io.out(`${epochLine(s, opts.epochs, batches)}\n`);
      },
    });
  } finally {
    progress?.close();
  }
  io.out(`${result.model.summary}; ${result.model.params.reduce((a, p) => a + K.count_params(p), 0)} parameters\n`);
  io.out(
    `time: build ${fmt(result.buildSeconds, 1)} s, train ${fmt(result.trainSeconds, 1)} s, validation ${fmt(result.validationSeconds, 1)} s, test ${fmt(result.evalSeconds, 1)} s\n`,
  );
  io.out(`test accuracy: ${fmt(result.testAccuracy, 4)}\n`);
  if (f.export !== undefined) {
    const name = nameFromPath(f.export);
    result.predict.exportModule({ name, shapes: [[f.exportBatch, ...result.model.exampleShape]] }).write(f.export);
    io.out(
      `wrote ${f.export}: export function ${name} (${f.exportBatch} image${f.exportBatch === 1 ? '' : 's'} per call)\n`,
    );
  }
}

/**
 * One cli-progress bar per epoch, kept when the epoch ends. The terminal's settings are left
 * alone (no hidden cursor; `linewrap: true` leaves wrapping on, and cli-progress cuts the line to the width
 * itself), so Ctrl-C, which ends the process at once during the synchronous training loop, has
 * nothing to restore. Warnings during an epoch are printed above the bar.
 */
class Progress {
  private bar: cliProgress.SingleBar | undefined;
  private line = '';
  private warnings: WarningSink | undefined;

  constructor(private readonly stream: ProgressStream) {}

  start(header: string, steps: number): void {
    this.stream.write(`${header}\n`);
    this.line = '';
    this.bar = new cliProgress.SingleBar({
      format: (_o, _p, payload: { line?: string }) => payload.line ?? '',
      stream: this.stream,
      hideCursor: false,
      linewrap: true,
      clearOnComplete: true,
      gracefulExit: false,
    });
    this.bar.start(steps, 0, { line: '' });
    this.warnings = setWarningSink((m) => {
      this.stream.write(`\r\x1b[K${m}\n${this.line}`);
    });
  }

  update(line: string): void {
    this.line = line;
    this.bar?.update({ line });
  }

  /**
   * Replaces the bar by the epoch's final line, which stays. Written directly rather than as
   * the bar's last frame: cli-progress cuts a frame to the terminal's width, and this line
   * (with the validation metrics) may be wider; it wraps instead.
   */
  keep(line: string): void {
    this.close();
    this.stream.write(`${line}\n`);
  }

  close(): void {
    this.bar?.stop();
    this.bar = undefined;
    if (this.warnings !== undefined) setWarningSink(this.warnings);
    this.warnings = undefined;
  }
}

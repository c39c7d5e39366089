package train

import (
	"errors"
	"math"
	"reflect"
	"slices"

	"fmt"
	"github.com/hora-dl/hora/internal/strictyaml"
	"github.com/hora-dl/hora/optim"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// FashionMNISTMean is the mean pixel value of the Fashion-MNIST training
// images scaled to [0, 1]; data.normalize subtracts it.
const FashionMNISTMean = 0.2860

// FashionMNISTStd is the standard deviation of the Fashion-MNIST training
// pixels scaled to [0, 1]; data.normalize divides by it.
const FashionMNISTStd = 0.3530

// DefaultDataDir is where Debian's dataset-fashion-mnist package installs
// the Fashion-MNIST files; it is the default of data.dir.
const DefaultDataDir = "/usr/share/datasets/fashion-mnist"

// Names accepted by Validate. They are read only.
var (
	builtinDatasets   = []string{"fashion-mnist", "idx", "text", "images", "csv"}
	builtinModels     = []string{"mlp", "lenet5", "cnn", "resnet18", "resnet34", "resnet20", "resnet56", "resnet", "mobilenet", "transformer", "charlm", "onnx"}
	knownStems        = []string{"cifar", "imagenet"}
	knownFormats      = []string{"text", "json"}
	knownMetrics      = []string{"auto", "test_loss", "test_accuracy"}
	knownActivations  = []string{"relu", "gelu", "tanh", "sigmoid", "silu"}
	knownOptimizers   = []string{"sgd", "adam", "adamw", "rmsprop", "adagrad"}
	knownSchedules    = []string{"none", "step", "multistep", "cosine"}
	knownPer          = []string{"epoch", "step"}
	knownScalings     = []string{"linear", "sqrt", "none"}
	knownCompression  = []string{"none", "fp16"}
	knownHierarchical = []string{"auto", "on", "off"}
	knownPrecisions   = []string{"fp32", "bf16", "fp16"}
	knownTasks        = []string{"classification", "regression"}
	knownCaches       = []string{"auto", "memory", "none"}
	knownBadImage     = []string{"fail", "skip"}
	knownStats        = []string{"", "imagenet", "fashion-mnist"}
)

// Upper bounds of the keys that size memory or work: Validate refuses a
// larger value when the configuration is loaded, before anything runs,
// and the doc comment of each key states its bound.
const (
	// maxWidth bounds the width of a layer: each of model.hidden and
	// model.widths, model.dim and model.ff.
	maxWidth = 1 << 20
	// maxLayerWeights bounds the weights of one layer (a weight matrix or
	// a convolution's kernel): 2147483648 float32 numbers take 8 GiB.
	maxLayerWeights = 1 << 31
	// maxLayers bounds the layers of a model: the hidden layers of "mlp"
	// (model.hidden), the Transformer blocks (model.layers) and the
	// residual blocks of "resnet" in all (model.blocks).
	maxLayers = 1024
	// maxClasses bounds model.classes and model.head.classes.
	maxClasses = 1 << 20
	// maxImageSide bounds each side of data.image_size, and
	// model.patch_size.
	maxImageSide = 1 << 15
	// maxContext bounds model.context: attention holds context² numbers
	// per head and sample.
	maxContext = 1 << 14
	// maxBatchSize bounds train.batch_size and train.eval_batch_size.
	maxBatchSize = 1 << 24
	// maxPrefetch bounds train.prefetch.
	maxPrefetch = 1024
	// maxThreads bounds train.threads and data.workers.
	maxThreads = 4096
	// maxEpochs bounds train.epochs.
	maxEpochs = 1 << 20
	// maxKeep bounds checkpoint.keep.
	maxKeep = 1024
	// maxSampleLength bounds sample.length.
	maxSampleLength = 1 << 20
	// maxBackwardPasses bounds dist.backward_passes_per_step.
	maxBackwardPasses = 1 << 16
	// maxFusionThreshold bounds dist.fusion_threshold, in bytes (16 GiB).
	maxFusionThreshold = 1 << 34
	// maxWaitS bounds the times in seconds of dist.stall_warning_s,
	// dist.stall_shutdown_s and dist.timeout_s: a week.
	maxWaitS = 7 * 24 * 3600
	// maxCycleTimeMS bounds dist.cycle_time_ms: a minute.
	maxCycleTimeMS = 60_000
)

// Config is the whole training configuration, read from a YAML file by
// LoadConfig. DefaultConfig gives the values of the keys a file leaves out.
type Config struct {
	// Seed seeds every random number generator of the run (initialization,
	// shuffling, dropout). Default 1.
	Seed uint64 `yaml:"seed"`
	// Device names the device to train on: "cpu", "cuda" (under mpirun,
	// each rank takes the GPU of its local rank), "cuda:1". Default "cpu".
	Device string `yaml:"device"`
	// Precision is the arithmetic of matrix products and convolutions on
	// a GPU: "fp32" (default), "bf16" (inputs rounded to bfloat16,
	// float32 accumulation and weights) or "fp16" (float16 inputs, with
	// dynamic loss scaling). The CPU computes in fp32 only.
	Precision string `yaml:"precision"`
	// TF32 lets float32 matrix products on a GPU use TensorFloat-32
	// (faster, about 1e-3 relative precision). Default true.
	TF32 bool `yaml:"tf32"`
	// Task is what the model learns: "classification" (the default:
	// cross-entropy on class logits, reported as loss and accuracy) or
	// "regression" (one real number per sample, data set "csv": the model
	// learns the targets standardized with the training rows' mean and
	// standard deviation, saved with the run; the mean squared error is
	// reported as loss (MSE), RMSE and R² in the targets' units, and
	// predict and export give values in those units).
	Task string `yaml:"task"`
	// Data selects the data set.
	Data DataConfig `yaml:"data"`
	// Model selects and shapes the network.
	Model ModelConfig `yaml:"model"`
	// Optimizer selects the optimizer and its hyper-parameters.
	Optimizer OptimizerConfig `yaml:"optimizer"`
	// Schedule selects the learning-rate schedule.
	Schedule ScheduleConfig `yaml:"schedule"`
	// Train holds the training-loop settings.
	Train TrainConfig `yaml:"train"`
	// Output says where results go.
	Output OutputConfig `yaml:"output"`
	// Dist configures data-parallel training, which runs when the command
	// is started by mpirun with several ranks; a single process ignores
	// all of it but backward_passes_per_step.
	Dist DistConfig `yaml:"dist"`
	// Timeline, when set, is the file where rank 0 writes a Chrome-tracing
	// JSON of its collectives and training phases (open it in
	// chrome://tracing or Perfetto); a bare file name ("timeline.json")
	// goes in output.dir. The HORA_TIMELINE environment
	// variable sets it too, and wins. Default "" (off).
	Timeline string `yaml:"timeline"`
	// Export lists the files the trained model is exported to.
	Export ExportConfig `yaml:"export"`
	// Checkpoint says how often the full training state is saved and how
	// many checkpoints are kept.
	Checkpoint CheckpointConfig `yaml:"checkpoint"`
	// Sample configures the text a language model (model "charlm") writes
	// after each evaluation and for the predict command.
	Sample SampleConfig `yaml:"sample"`
	// Deterministic makes a run bit-for-bit repeatable on the same
	// machine: the CPU thread count is pinned (train.threads, or the
	// cores found at the start) and recorded in each checkpoint so that a
	// resume uses the same; a GPU runs without TF32. Runs on the CPU are
	// already repeatable for a fixed thread count. Default false.
	Deterministic bool `yaml:"deterministic"`

	// path is the file the configuration was read from ("" when built in Go).
	path string
	// modelGiven and dataGiven are set by Fit, which trains a model and
	// data given in Go: then model.name and data.name name no builder.
	modelGiven, dataGiven bool
	// origins records, for each key path ("optimizer.lr",
	// "schedule.milestones[1]"), where its value came from; nil when built
	// in Go.
	origins strictyaml.Origins
}

// DataConfig selects the data set.
type DataConfig struct {
	// Name is the data set: "fashion-mnist" (the default), "idx" (any
	// folder holding train/t10k image and label files in the IDX format
	// of Fashion-MNIST, e.g. MNIST), "images" (a folder of image files,
	// one sub-folder per class, as torchvision's ImageFolder), "csv" (a
	// table: data.file or data.train_file and data.val_file), "text" (the
	// files of data.files, for model "charlm"), or the name of a data set
	// a program registered with RegisterDataset.
	Name string `yaml:"name"`
	// Dir is the folder of the data set. For "fashion-mnist" and "idx" it
	// holds {train,t10k}-{images-idx3,labels-idx1}-ubyte(.gz); for
	// "images" it holds train/<class>/* and val/<class>/* (test/ is
	// accepted for val/; without either, data.val_fraction of train/ is
	// kept for validation). Default DefaultDataDir.
	Dir string `yaml:"dir"`
	// Normalize maps the pixels p in [0, 1] of "fashion-mnist" and "idx"
	// to (p - FashionMNISTMean) / FashionMNISTStd. Default true. Data set
	// "images" uses data.mean and data.std instead.
	Normalize bool `yaml:"normalize"`
	// Files lists the text files (or glob patterns) of data set "text",
	// read in sorted order and joined with newlines. Default [] (required
	// by "text").
	Files []string `yaml:"files"`
	// ValFraction is the fraction of the data kept for validation when
	// there is no separate validation set: of the text of "text" (from
	// its end), of train/ of "images" without val/, and of data.file of
	// "csv" (a split drawn from the seed, by class for classification).
	// Default 0.1.
	ValFraction float64 `yaml:"val_fraction"`
	// AugmentPad pads training images by this many pixels on each side
	// and crops them back at a random offset (torchvision's RandomCrop
	// with padding); 0 (the default) turns it off. The random choices
	// depend only on the seed, the epoch and the sample, so a resumed or
	// rescaled run sees the same images.
	AugmentPad int `yaml:"augment_pad"`
	// AugmentFlip mirrors each training image left to right with
	// probability 1/2. Default false.
	AugmentFlip bool `yaml:"augment_flip"`
	// AugmentCrop turns on torchvision's RandomResizedCrop for the
	// training images of "images": a random part of each image (its area
	// a fraction data.augment_scale of the image's, its aspect ratio in
	// data.augment_ratio) is resized to data.image_size. Evaluation
	// resizes and crops the center. Default false.
	AugmentCrop bool `yaml:"augment_crop"`
	// AugmentScale is the range of the area fraction of data.augment_crop.
	// Default [0.08, 1].
	AugmentScale [2]float64 `yaml:"augment_scale"`
	// AugmentRatio is the range of the aspect ratio (width / height) of
	// data.augment_crop. Default [0.75, 1.3333333333333333].
	AugmentRatio [2]float64 `yaml:"augment_ratio"`
	// ImageSize is the [height, width] the images of "images" are resized
	// (and center-cropped) to, each at most 32768; [] (the default) takes
	// the size of the first training image.
	ImageSize []int `yaml:"image_size"`
	// Channels is the number of channels the images of "images" are
	// converted to: 1 (grey) or 3 (RGB); 0 (the default) takes the first
	// training image's (1 for grey, 3 for colour).
	Channels int `yaml:"channels"`
	// Mean and Std normalize the pixels p in [0, 1] of "images", channel
	// by channel: (p - mean) / std. Each holds one value per channel, or
	// one for all. Default [] (set by data.stats, else no normalization).
	Mean []float64 `yaml:"mean"`
	// Std: see Mean. Default [].
	Std []float64 `yaml:"std"`
	// Stats names a preset of data.mean and data.std: "imagenet"
	// ([0.485, 0.456, 0.406] and [0.229, 0.224, 0.225]) or
	// "fashion-mnist" (FashionMNISTMean and FashionMNISTStd). Default ""
	// (none).
	Stats string `yaml:"stats"`
	// Cache keeps the decoded images of "images" in memory: "auto" (the
	// default: when they take at most 2 GiB), "memory" (always) or "none"
	// (decode every image at every use).
	Cache string `yaml:"cache"`
	// Workers is the number of goroutines that decode and transform the
	// images of "images" for each batch; 0 (the default) uses every core.
	// At most 4096.
	Workers int `yaml:"workers"`
	// OnBadImage says what a corrupt or unreadable image of "images"
	// does: "fail" (the default: the run stops, naming the file) or
	// "skip" (the run goes on without it, listing it in the log).
	OnBadImage string `yaml:"on_bad_image"`
	// File is the CSV table of "csv", split into training and validation
	// rows by data.val_fraction. A relative path is relative to the
	// working directory.
	File string `yaml:"file"`
	// TrainFile and ValFile are the training and validation tables of
	// "csv", when they are separate files (instead of data.file).
	TrainFile string `yaml:"train_file"`
	// ValFile: see TrainFile.
	ValFile string `yaml:"val_file"`
	// Label is the column of "csv" to predict: its name in the header, or
	// its index (0 is the first column, -1 the last). Required by "csv".
	Label string `yaml:"label"`
	// Features lists the columns of "csv" the model reads, by name or
	// index; [] (the default) reads every other column whose first value
	// is a number. They are standardized with the mean and standard
	// deviation of the training rows, saved with the run.
	Features []string `yaml:"features"`
	// Header says that the first line of the tables of "csv" (after
	// data.skip_rows) names the columns. Default true.
	Header bool `yaml:"header"`
	// SkipRows is the number of lines skipped at the start of the tables
	// of "csv" (scikit-learn's files start with a line of counts).
	// Default 0.
	SkipRows int `yaml:"skip_rows"`
	// Args holds the keys of a data set registered in Go with
	// RegisterDataset, decoded strictly into that data set's own struct.
	// The built-in data sets take none. Default {}.
	Args strictyaml.Raw `yaml:"args,omitempty"`
}

// ModelConfig selects and shapes the network.
type ModelConfig struct {
	// Name is the architecture: "mlp", "lenet5", "cnn" (the small CNN),
	// "resnet" (blocks, widths and stem below), "resnet18", "resnet34",
	// "resnet20", "resnet56", "mobilenet" (depthwise-separable CNN),
	// "transformer" (Vision-Transformer-style classifier), "charlm" (a
	// character-level Transformer language model, data set "text"), or
	// "onnx" for a model imported from the ONNX file named by File, or
	// the name of a model a program registered with RegisterModel.
	// Required.
	Name string `yaml:"name"`
	// File is the ONNX model that name "onnx" trains (fine-tunes): its
	// float initializers are the parameters. It must take the data's
	// samples with a batch axis first ([batch, C, H, W] for images) and
	// return [batch, model.classes] logits, or model.head replaces its
	// final classifier. A relative path is relative to the working
	// directory.
	File string `yaml:"file"`
	// Input names the graph input of model "onnx" that the samples feed,
	// when the model has several; the outputs may need no other input.
	// Default "" (the model's only input).
	Input string `yaml:"input"`
	// Head replaces the final classifier of model "onnx" (the last Gemm,
	// or MatMul and Add, feeding the output) by a new linear layer of
	// head.classes outputs, initialised from the seed: transfer learning.
	Head HeadConfig `yaml:"head"`
	// Freeze lists glob patterns (path.Match syntax: *, ?, [...]) of
	// parameter names that are not trained: "*" freezes everything but a
	// new head. Each pattern must match some parameter. A BatchNorm whose
	// weight and bias are frozen keeps its running statistics. The names
	// are printed by the train command's model summary. Default [].
	Freeze []string `yaml:"freeze"`
	// Hidden lists the widths of the hidden layers of "mlp": at most 1024
	// layers, each at most 1048576 wide, and at most 2147483648 weights
	// from one layer to the next (and from the last to the classes).
	// Default [512, 256].
	Hidden []int `yaml:"hidden"`
	// Activation is the non-linearity: "relu" (default), "gelu", "tanh",
	// "sigmoid" or "silu".
	Activation string `yaml:"activation"`
	// Dropout is the probability of zeroing an activation in training;
	// 0 (the default) disables dropout.
	Dropout float64 `yaml:"dropout"`
	// Classes is the number of classes the model predicts; 0 (the
	// default) takes the data's class count (Fashion-MNIST's 10, the
	// class folders of "images", the labels of "csv", the largest label
	// plus one of "idx"). A regression predicts one number: 0 or 1. At
	// most 1048576.
	Classes int `yaml:"classes"`
	// Blocks lists the residual blocks per stage of "resnet", e.g.
	// [2, 2, 2]; at most 1024 blocks in all. Default [2, 2, 2].
	Blocks []int `yaml:"blocks"`
	// Widths lists the channels per stage of "resnet" (as many as
	// blocks), e.g. [16, 32, 64]: each at most 1048576, with at most
	// 2147483648 weights in a 3×3 convolution of the stage (width² × 9).
	// Default [16, 32, 64].
	Widths []int `yaml:"widths"`
	// Stem is the first layer of the ResNets: "cifar" (3×3 convolution,
	// for small images, the default) or "imagenet" (7×7 stride-2
	// convolution and max-pool).
	Stem string `yaml:"stem"`
	// Dim is the width of the tokens of "transformer" and "charlm": at
	// most 1048576, with at most 2147483648 weights in an attention
	// projection (dim²). Default 128.
	Dim int `yaml:"dim"`
	// Heads is the number of attention heads of "transformer" and
	// "charlm"; it must divide dim. Default 4.
	Heads int `yaml:"heads"`
	// Layers is the number of Transformer blocks, at most 1024. Default 4.
	Layers int `yaml:"layers"`
	// FF is the hidden width of the feed-forward part of each Transformer
	// block: at most 1048576, with at most 2147483648 weights in its layers
	// (dim × ff). Default 512.
	FF int `yaml:"ff"`
	// PatchSize is the side of the square image patches that are the
	// tokens of "transformer" (it must divide the image's height and
	// width), at most 32768; 0 makes each image row a token. Default 7.
	PatchSize int `yaml:"patch_size"`
	// Context is the number of characters "charlm" sees at once (its
	// training window), at most 16384. Default 128.
	Context int `yaml:"context"`
	// Args holds the keys of a model registered in Go with RegisterModel
	// (model.args.width: 64), decoded strictly into that model's own
	// struct. The built-in models take none: their keys are the ones
	// above. Default {}.
	Args strictyaml.Raw `yaml:"args,omitempty"`
}

// HeadConfig describes the new classifier that replaces an ONNX model's
// own (model.head).
type HeadConfig struct {
	// Classes is the number of outputs of the new classifier, at most
	// 1048576; 0 (the default) keeps the model's classifier.
	Classes int `yaml:"classes"`
}

// CheckpointConfig says how often the full training state (weights,
// optimizer, schedule, random generators, data position) is saved under
// output.dir/checkpoints, and which checkpoints are kept.
type CheckpointConfig struct {
	// EverySteps saves a checkpoint every this many optimizer steps, in
	// addition to the end of each epoch; 0 (the default) saves at the end
	// of epochs only.
	EverySteps int `yaml:"every_steps"`
	// Keep is the number of most recent checkpoints kept (the best one is
	// kept too), at most 1024. Default 3.
	Keep int `yaml:"keep"`
	// BestMetric is the evaluation metric that picks the best checkpoint:
	// "test_accuracy" (higher is better), "test_loss" (lower is better)
	// or "auto" (the default: accuracy for classifiers, loss for language
	// models).
	BestMetric string `yaml:"best_metric"`
}

// SampleConfig configures text generation by a language model.
type SampleConfig struct {
	// Prompt is the text generation starts from; "" starts from a
	// newline. Default "".
	Prompt string `yaml:"prompt"`
	// Length is the number of characters generated, at most 1048576.
	// Default 200.
	Length int `yaml:"length"`
	// Temperature divides the logits before sampling: below 1 is more
	// conservative, 0 always takes the most likely character. Default 0.8.
	Temperature float64 `yaml:"temperature"`
	// TopK samples among the k most likely characters only; 0 (the
	// default) among all.
	TopK int `yaml:"top_k"`
}

// ExportConfig lists the files the trained model is written to after the
// last epoch, by rank 0.
type ExportConfig struct {
	// ONNX, when set, is the file the model is exported to as an opset-17
	// ONNX graph with a dynamic batch dimension: input "input" (images
	// [batch, C, H, W] normalized as in training, a table's raw features
	// [batch, F], which the graph standardizes itself, or a language
	// model's character ids), output "output" (logits, or a regression's
	// numbers). The graph's doc_string holds the class names and the input
	// transform as JSON. The -export-onnx flag sets it too. Default ""
	// (no export).
	ONNX string `yaml:"onnx"`
}

// OptimizerConfig selects the optimizer and its hyper-parameters. Fields an
// optimizer does not use are ignored.
type OptimizerConfig struct {
	// Name is the optimizer: "sgd", "adam", "adamw", "rmsprop" or
	// "adagrad". Required.
	Name string `yaml:"name"`
	// LR is the (initial) learning rate. Required, > 0.
	LR float64 `yaml:"lr"`
	// Momentum is the momentum factor of sgd and rmsprop. Default 0.
	Momentum float64 `yaml:"momentum"`
	// Nesterov turns on Nesterov momentum (sgd; needs momentum > 0 and
	// dampening 0). Default false.
	Nesterov bool `yaml:"nesterov"`
	// Dampening damps the momentum of sgd. Default 0.
	Dampening float64 `yaml:"dampening"`
	// WeightDecay is the L2 penalty (decoupled for adamw). Default 0.
	WeightDecay float64 `yaml:"weight_decay"`
	// Betas are the decay rates of the first and second moment estimates
	// of adam and adamw. Default [0.9, 0.999].
	Betas [2]float64 `yaml:"betas"`
	// Eps is added to denominators for numerical stability. Default 1e-10
	// for adagrad and 1e-8 for the others (LoadConfig picks it from the
	// optimizer name when the key is not set).
	Eps float64 `yaml:"eps"`
	// Alpha is the smoothing constant of rmsprop. Default 0.99.
	Alpha float64 `yaml:"alpha"`
	// Centered normalizes rmsprop's gradient by its estimated variance.
	// Default false.
	Centered bool `yaml:"centered"`
	// AMSGrad uses the AMSGrad variant of adam and adamw. Default false.
	AMSGrad bool `yaml:"amsgrad"`
	// ClipNorm clips the global L2 norm of the gradients to this value
	// before each step; 0 (the default) disables clipping.
	ClipNorm float64 `yaml:"clip_norm"`
}

// DistConfig configures data-parallel training (Horovod's recipe). Each
// rank trains on its own shard of the data with train.batch_size samples
// per step, so the global batch is ranks × batch_size.
type DistConfig struct {
	// LRScaling multiplies optimizer.lr by a function of the number of
	// ranks N: "linear" (×N, the default), "sqrt" (×√N) or "none".
	LRScaling string `yaml:"lr_scaling"`
	// WarmupSteps ramps that multiplier from 1 to its full value over this
	// many optimizer steps (gradual warm-up); 0 (the default) disables it.
	// It composes with the schedule's own warm-up (schedule.warmup_*) by
	// multiplication: the rate applied at a step is the schedule's rate
	// times this multiplier, and that product is what metrics.jsonl logs.
	WarmupSteps int `yaml:"warmup_steps"`
	// FusionThreshold is the size in bytes of the buffer in which small
	// gradients are fused into one allreduce; 0 turns fusion off. At most
	// 17179869184 (16 GiB). Default 67108864 (64 MB).
	FusionThreshold int64 `yaml:"fusion_threshold"`
	// CycleTimeMS is the time in milliseconds between negotiation rounds
	// while gradients wait; those ready in one cycle are fused. At most
	// 60000. Default 1.
	CycleTimeMS float64 `yaml:"cycle_time_ms"`
	// Compression is how gradients travel: "none" (default) or "fp16"
	// (half the bytes, rounded to float16).
	Compression string `yaml:"compression"`
	// BackwardPassesPerStep accumulates the gradients of this many batches
	// before each optimizer step (also in a single process), at most 65536.
	// Default 1.
	BackwardPassesPerStep int `yaml:"backward_passes_per_step"`
	// StallWarningS: when some ranks have waited this many seconds for a
	// gradient the others have not sent, rank 0 prints which tensors and
	// which ranks; 0 turns the check off. At most 604800 (a week).
	// Default 60.
	StallWarningS float64 `yaml:"stall_warning_s"`
	// StallShutdownS stops the job after a stall of this many seconds;
	// 0 never does. At most 604800 (a week). Default 300.
	StallShutdownS float64 `yaml:"stall_shutdown_s"`
	// DropLast drops the training samples left over when they do not
	// divide evenly among the ranks; otherwise (the default) the last
	// shards are padded with samples from the start of the epoch.
	DropLast bool `yaml:"drop_last"`
	// TimeoutS bounds how long a rank may stop answering: every rank
	// exchanges heartbeats with every other over a TCP connection of its
	// own, and a rank that hears nothing from another for this many
	// seconds (its host's link went down, the rank was stopped) or sees
	// it die ends the whole job, naming the rank and its host. A slow
	// rank still answers, so this is no limit on a step's time. 0 turns
	// the check off (when the hosts' firewalls allow MPI's ports only).
	// At most 604800 (a week). Default 60.
	TimeoutS float64 `yaml:"timeout_s"`
	// Hierarchical is how gradients are reduced when the job spans
	// several hosts and some host holds more than one rank: "auto" (the
	// default) and "on" reduce within each host through shared memory,
	// then between the hosts through MPI, then share the result within
	// each host (Horovod's hierarchical allreduce); "off" reduces over
	// all ranks through MPI. The HORA_HIERARCHICAL environment variable
	// (auto, on, off) overrides it.
	Hierarchical string `yaml:"hierarchical"`
}

// ScheduleConfig selects the learning-rate schedule.
type ScheduleConfig struct {
	// Name is the schedule: "none" (default, constant), "step" (multiply by
	// Gamma every StepSize periods), "multistep" (multiply by Gamma at each
	// of Milestones) or "cosine" (cosine annealing from the optimizer's LR
	// to MinLR over the run).
	Name string `yaml:"name"`
	// StepSize is the period of "step", in units of Per. Required by "step".
	StepSize int `yaml:"step_size"`
	// Gamma is the decay factor of "step" and "multistep". Default 0.1.
	Gamma float64 `yaml:"gamma"`
	// Milestones are the strictly increasing epochs (or steps, see Per) at
	// which "multistep" decays. Required by "multistep".
	Milestones []int `yaml:"milestones"`
	// MinLR is the final learning rate of "cosine". Default 0.
	MinLR float64 `yaml:"min_lr"`
	// WarmupEpochs ramps the learning rate linearly from
	// WarmupStartFactor×LR up to LR over this many epochs (or steps) before
	// the schedule starts; 0 (the default) disables warm-up.
	WarmupEpochs int `yaml:"warmup_epochs"`
	// WarmupStartFactor is the fraction of LR warm-up starts from.
	// Default 0.1.
	WarmupStartFactor float64 `yaml:"warmup_start_factor"`
	// Per says when the schedule advances: "epoch" (default) or "step"
	// (every optimizer step).
	Per string `yaml:"per"`
}

// TrainConfig holds the training-loop settings.
type TrainConfig struct {
	// Epochs is the number of passes over the training set, at most
	// 1048576. Default 1.
	Epochs int `yaml:"epochs"`
	// BatchSize is the number of samples per optimizer step, at most
	// 16777216. Default 128.
	BatchSize int `yaml:"batch_size"`
	// EvalBatchSize is the batch size used for evaluation, at most
	// 16777216. Default 1000.
	EvalBatchSize int `yaml:"eval_batch_size"`
	// LabelSmoothing is the label-smoothing factor of the cross-entropy
	// loss, in [0, 1). Default 0.
	LabelSmoothing float64 `yaml:"label_smoothing"`
	// Prefetch is the number of batches prepared ahead of the training
	// loop, at most 1024. Default 2.
	Prefetch int `yaml:"prefetch"`
	// Limit uses only the first Limit training samples; 0 (the default)
	// uses them all. Meant for quick runs and tests.
	Limit int `yaml:"limit"`
	// EvalEverySteps evaluates on the test set every this many optimizer
	// steps, in addition to the end of each epoch; 0 (the default) at the
	// end of epochs only.
	EvalEverySteps int `yaml:"eval_every_steps"`
	// LogEverySteps writes the training loss to metrics.jsonl every this
	// many optimizer steps. Default 50.
	LogEverySteps int `yaml:"log_every_steps"`
	// EMA keeps an exponential moving average of the weights with this
	// decay (e.g. 0.999), updated after each step; evaluation, the best
	// checkpoint and the exported model then use the averaged weights.
	// 0 (the default) turns it off.
	EMA float64 `yaml:"ema"`
	// Patience stops training early when the best metric
	// (checkpoint.best_metric) has not improved by more than MinDelta for
	// this many evaluations in a row; 0 (the default) never stops early.
	Patience int `yaml:"patience"`
	// MinDelta is the smallest change of the best metric that counts as
	// an improvement for Patience. Default 0.
	MinDelta float64 `yaml:"min_delta"`
	// Threads is the number of CPU threads that compute; 0 (the default)
	// uses every core (under mpirun, the rank's share). At most 4096.
	Threads int `yaml:"threads"`
}

// OutputConfig says where results go.
type OutputConfig struct {
	// Dir is the folder for checkpoints, metrics and plots. LoadConfig
	// defaults it to "runs/<config file name without extension>"; the
	// -out flag of the command overrides it.
	Dir string `yaml:"dir"`
	// Progress shows a progress bar while training: a live bar with the
	// ETA, samples/s and loss on a terminal, a line every tenth of an
	// epoch elsewhere. Default true.
	Progress bool `yaml:"progress"`
	// Format is the format of what the command prints: "text" (the
	// default) or "json" (one JSON object per line and event, for batch
	// systems; no progress bar).
	Format string `yaml:"format"`
	// Quiet prints only the start, one line per epoch and the end. The
	// -q flag sets it. Default false.
	Quiet bool `yaml:"quiet"`
	// Plot draws output.dir/curves.png (loss and accuracy per step and
	// epoch, train and test) after each evaluation. Default true.
	Plot bool `yaml:"plot"`
}

// DefaultConfig returns the configuration used for every key a file leaves
// out. Model.Name, Optimizer.Name, Optimizer.LR and Output.Dir have no
// default (LoadConfig derives Output.Dir from the file name), so
// DefaultConfig().Validate() fails until they are set.
func DefaultConfig() *Config {
	return &Config{
		Seed:      1,
		Task:      "classification",
		Device:    "cpu",
		Precision: "fp32",
		TF32:      true,
		Data: DataConfig{
			Name:         "fashion-mnist",
			Dir:          DefaultDataDir,
			Normalize:    true,
			Files:        []string{},
			ValFraction:  0.1,
			AugmentScale: [2]float64{0.08, 1},
			AugmentRatio: [2]float64{3.0 / 4, 4.0 / 3},
			ImageSize:    []int{},
			Mean:         []float64{},
			Std:          []float64{},
			Cache:        "auto",
			OnBadImage:   "fail",
			Features:     []string{},
			Header:       true,
		},
		Model: ModelConfig{
			Hidden:     []int{512, 256},
			Activation: "relu",
			Freeze:     []string{},
			Blocks:     []int{2, 2, 2},
			Widths:     []int{16, 32, 64},
			Stem:       "cifar",
			Dim:        128,
			Heads:      4,
			Layers:     4,
			FF:         512,
			PatchSize:  7,
			Context:    128,
		},
		Checkpoint: CheckpointConfig{Keep: 3, BestMetric: "auto"},
		Sample:     SampleConfig{Length: 200, Temperature: 0.8},
		Optimizer: OptimizerConfig{
			Betas: [2]float64{0.9, 0.999},
			Eps:   1e-8,
			Alpha: 0.99,
		},
		Schedule: ScheduleConfig{
			Name:              "none",
			Gamma:             0.1,
			WarmupStartFactor: 0.1,
			Per:               "epoch",
		},
		Train: TrainConfig{
			Epochs:        1,
			BatchSize:     128,
			EvalBatchSize: 1000,
			Prefetch:      2,
			LogEverySteps: 50,
		},
		Output: OutputConfig{
			Progress: true,
			Format:   "text",
			Plot:     true,
		},
		Dist: DistConfig{
			LRScaling:             "linear",
			FusionThreshold:       64 << 20,
			CycleTimeMS:           1,
			Compression:           "none",
			BackwardPassesPerStep: 1,
			StallWarningS:         60,
			StallShutdownS:        300,
			TimeoutS:              60,
			Hierarchical:          "auto",
		},
	}
}

// defaultEps returns the default of optimizer.eps for the named optimizer.
func defaultEps(optimizer string) float64 {
	if optimizer == "adagrad" {
		return 1e-10
	}
	return 1e-8
}

// File returns the path of the file the configuration was loaded from, or
// "" for a configuration built in Go.
func (c *Config) File() string { return c.path }

// LoadConfig reads the YAML configuration file at path, fills in defaults
// (see DefaultConfig), applies the -set overrides in sets (each
// "dotted.key=value", the value written in YAML: train.epochs=3,
// model.hidden=[256,128]) in order, and validates the result.
//
// The file must be a regular file of at most strictyaml.MaxSize bytes.
// Decoding is strict: an unknown key, a value of the wrong type, a duplicate
// key or a YAML syntax error is an error of one line that starts with
// "path:line:column: "; an error in a -set starts with "-set key=value: ".
func LoadConfig(path string, sets []string) (*Config, error) {
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseConfig(path, data, sets)
}

// ParseConfig is LoadConfig for a file already read: name is the file's
// path, used in error messages and for the default output.dir.
func ParseConfig(name string, data []byte, sets []string) (*Config, error) {
	cfg := DefaultConfig()
	cfg.path = name
	base := filepath.Base(name)
	cfg.Output.Dir = filepath.Join("runs", strings.TrimSuffix(base, filepath.Ext(base)))
	cfg.origins = strictyaml.Origins{}

	if err := strictyaml.Decode(name, data, cfg, cfg.origins); err != nil {
		return nil, err
	}
	for _, s := range sets {
		if err := strictyaml.ApplySet(name, cfg, s, cfg.origins); err != nil {
			return nil, err
		}
	}
	if _, ok := cfg.origins["optimizer.eps"]; !ok {
		cfg.Optimizer.Eps = defaultEps(cfg.Optimizer.Name)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate checks the values of the configuration. It reports every problem
// found, one per line, each naming the file (with line and column when the
// key was in the file), the key, and the expected and found values, e.g.
//
//	configs/x.yaml:12:7: optimizer.lr: expected a number > 0, found -1
func (c *Config) Validate() error {
	v := &configValidator{c: c}

	v.finite(reflect.ValueOf(c).Elem(), "")
	v.nonEmpty("device", c.Device, `a device name such as "cpu" or "cuda:0"`)
	v.oneOf("precision", c.Precision, knownPrecisions)
	if c.Precision != "fp32" && !strings.HasPrefix(c.Device, "cuda") {
		v.fail("precision", fmt.Sprintf(`"fp32" on device %q (bf16 and fp16 need a CUDA device)`, c.Device), strconv.Quote(c.Precision))
	}
	if !c.dataGiven {
		v.oneOf("data.name", c.Data.Name, datasetRegistry.names())
	}

	if !c.modelGiven {
		v.oneOf("model.name", c.Model.Name, modelRegistry.names())
	}
	v.validateArgs()
	if c.Model.Name == "mlp" {
		v.validateHidden()
	}
	if c.Model.Name == "onnx" && c.Model.File == "" {
		v.fail("model.file", `the ONNX file to train for model "onnx"`, `""`)
	}
	if c.Model.Name != "onnx" && c.Model.File != "" {
		v.fail("model.file", `"" (a file is only read for model "onnx")`, strconv.Quote(c.Model.File))
	}
	v.oneOf("model.activation", c.Model.Activation, knownActivations)
	v.inRange("model.dropout", c.Model.Dropout, 0, 1, false)
	v.validateModel()
	v.validateData()

	o := c.Optimizer
	v.oneOf("optimizer.name", o.Name, knownOptimizers)
	oc := optimizerConfig(o)
	if oc != nil {
		v.hyperParameter(oc.Validate())
	}
	v.atLeast0("optimizer.clip_norm", o.ClipNorm)

	d := c.Dist
	v.oneOf("dist.lr_scaling", d.LRScaling, knownScalings)
	v.oneOf("dist.compression", d.Compression, knownCompression)
	v.oneOf("dist.hierarchical", d.Hierarchical, knownHierarchical)
	if d.WarmupSteps < 0 {
		v.fail("dist.warmup_steps", "an integer >= 0", strconv.Itoa(d.WarmupSteps))
	}
	if d.FusionThreshold < 0 {
		v.fail("dist.fusion_threshold", "a size in bytes >= 0 (0 turns fusion off)", strconv.FormatInt(d.FusionThreshold, 10))
	}
	atMost(v, "dist.fusion_threshold", d.FusionThreshold, maxFusionThreshold)
	v.positive("dist.cycle_time_ms", d.CycleTimeMS)
	atMost(v, "dist.cycle_time_ms", d.CycleTimeMS, maxCycleTimeMS)
	v.atLeast1("dist.backward_passes_per_step", d.BackwardPassesPerStep)
	atMost(v, "dist.backward_passes_per_step", d.BackwardPassesPerStep, maxBackwardPasses)
	v.atLeast0("dist.stall_warning_s", d.StallWarningS)
	atMost(v, "dist.stall_warning_s", d.StallWarningS, maxWaitS)
	v.atLeast0("dist.stall_shutdown_s", d.StallShutdownS)
	atMost(v, "dist.stall_shutdown_s", d.StallShutdownS, maxWaitS)
	v.atLeast0("dist.timeout_s", d.TimeoutS)
	atMost(v, "dist.timeout_s", d.TimeoutS, maxWaitS)

	s := c.Schedule
	v.oneOf("schedule.name", s.Name, knownSchedules)
	if s.WarmupEpochs < 0 {
		v.fail("schedule.warmup_epochs", "an integer >= 0", strconv.Itoa(s.WarmupEpochs))
	}
	if slices.Contains(knownSchedules, s.Name) && s.WarmupEpochs >= 0 {
		// The schedule checks the base rate too: report it only when no
		// optimizer did.
		_, err := buildSchedule(c, fixedLR(o.LR), schedulePeriods(c, 1))
		var ce *optim.ConfigError
		if oc == nil || !errors.As(err, &ce) || ce.Field != "base learning rate" {
			v.hyperParameter(err)
		}
	}
	v.oneOf("schedule.per", s.Per, knownPer)

	t := c.Train
	v.atLeast1("train.epochs", t.Epochs)
	atMost(v, "train.epochs", t.Epochs, maxEpochs)
	v.atLeast1("train.batch_size", t.BatchSize)
	atMost(v, "train.batch_size", t.BatchSize, maxBatchSize)
	v.atLeast1("train.eval_batch_size", t.EvalBatchSize)
	atMost(v, "train.eval_batch_size", t.EvalBatchSize, maxBatchSize)
	v.inRange("train.label_smoothing", t.LabelSmoothing, 0, 1, false)
	if t.Prefetch < 0 {
		v.fail("train.prefetch", "an integer >= 0", strconv.Itoa(t.Prefetch))
	}
	atMost(v, "train.prefetch", t.Prefetch, maxPrefetch)
	if t.Limit < 0 {
		v.fail("train.limit", "an integer >= 0 (0 uses every sample)", strconv.Itoa(t.Limit))
	}

	if t.EvalEverySteps < 0 {
		v.fail("train.eval_every_steps", "an integer >= 0 (0: at the end of epochs only)", strconv.Itoa(t.EvalEverySteps))
	}
	v.atLeast1("train.log_every_steps", t.LogEverySteps)
	v.inRange("train.ema", t.EMA, 0, 1, false)
	if t.Patience < 0 {
		v.fail("train.patience", "an integer >= 0 (0 never stops early)", strconv.Itoa(t.Patience))
	}
	v.atLeast0("train.min_delta", t.MinDelta)
	if t.Threads < 0 {
		v.fail("train.threads", "an integer >= 0 (0 uses every core)", strconv.Itoa(t.Threads))
	}
	atMost(v, "train.threads", t.Threads, maxThreads)

	k := c.Checkpoint
	if k.EverySteps < 0 {
		v.fail("checkpoint.every_steps", "an integer >= 0 (0: at the end of epochs only)", strconv.Itoa(k.EverySteps))
	}
	v.atLeast1("checkpoint.keep", k.Keep)
	atMost(v, "checkpoint.keep", k.Keep, maxKeep)
	v.oneOf("checkpoint.best_metric", k.BestMetric, knownMetrics)
	if k.BestMetric == "test_accuracy" && c.Model.Name == "charlm" {
		v.fail("checkpoint.best_metric", `"test_loss" or "auto" for a language model (it has no accuracy)`, strconv.Quote(k.BestMetric))
	}
	if k.BestMetric == "test_accuracy" && c.Task == "regression" {
		v.fail("checkpoint.best_metric", `"test_loss" or "auto" for a regression (it has no accuracy)`, strconv.Quote(k.BestMetric))
	}

	if c.Sample.Length < 0 {
		v.fail("sample.length", "an integer >= 0", strconv.Itoa(c.Sample.Length))
	}
	atMost(v, "sample.length", c.Sample.Length, maxSampleLength)
	v.atLeast0("sample.temperature", c.Sample.Temperature)
	if c.Sample.TopK < 0 {
		v.fail("sample.top_k", "an integer >= 0 (0: all characters)", strconv.Itoa(c.Sample.TopK))
	}

	v.nonEmpty("output.dir", c.Output.Dir, "a folder")
	v.oneOf("output.format", c.Output.Format, knownFormats)
	return errors.Join(v.errs...)
}

// hyperParameter records err, an optimizer's or a schedule's error, at
// the key of the hyper-parameter it names (optim.ConfigError), so that
// the message points at the line of the file.
func (v *configValidator) hyperParameter(err error) {
	if err == nil {
		return
	}
	var ce *optim.ConfigError
	if !errors.As(err, &ce) {
		v.errs = append(v.errs, err)
		return
	}
	key, kind := hyperKey(ce)
	if key == "" {
		v.errs = append(v.errs, fmt.Errorf("%s: %w", v.c.path, err))
		return
	}
	v.fail(key, kind+ce.Want, ce.Found)
}

// hyperKey returns the config key of the hyper-parameter ce names and the
// kind of value it takes ("a number ", "an integer ").
func hyperKey(ce *optim.ConfigError) (key, kind string) {
	if strings.HasSuffix(ce.Config, "Config") { // an optimizer's
		switch ce.Field {
		case "Beta1":
			return "optimizer.betas[0]", "a number "
		case "Beta2":
			return "optimizer.betas[1]", "a number "
		case "Nesterov":
			return "optimizer.nesterov", ""
		}
		if f, ok := reflect.TypeFor[OptimizerConfig]().FieldByName(ce.Field); ok {
			return "optimizer." + strictyaml.FieldKey(f), "a number "
		}
		return "", ""
	}
	field, index, _ := strings.Cut(ce.Field, "[")
	if index != "" {
		index = "[" + index
	}
	switch field {
	case "base learning rate":
		return "optimizer.lr", "a number "
	case "gamma":
		return "schedule.gamma", "a number "
	case "stepSize":
		return "schedule.step_size", "an integer "
	case "milestones":
		if index == "" {
			return "schedule.milestones", ""
		}
		return "schedule.milestones" + index, "an integer "
	case "etaMin":
		return "schedule.min_lr", "a number "
	case "startFactor":
		return "schedule.warmup_start_factor", "a number "
	case "warmupEpochs":
		return "schedule.warmup_epochs", "an integer "
	}
	return "", ""
}

// fixedLR is a base learning rate, for checking a schedule before the
// optimizer exists.
type fixedLR float64

func (f fixedLR) BaseLR() float64 { return float64(f) }

// validateModel checks the keys that shape the zoo's models.
func (v *configValidator) validateModel() {
	m := v.c.Model
	if m.Classes < 0 {
		v.fail("model.classes", "an integer >= 0 (0: the data's class count)", strconv.Itoa(m.Classes))
	}
	atMost(v, "model.classes", m.Classes, maxClasses)
	if m.Name != "onnx" {
		if m.Head.Classes != 0 {
			v.fail("model.head.classes", `0 (model.head replaces the classifier of model "onnx" only)`, strconv.Itoa(m.Head.Classes))
		}
		if m.Input != "" {
			v.fail("model.input", `"" (an input is chosen for model "onnx" only)`, strconv.Quote(m.Input))
		}
	}
	if m.Head.Classes < 0 {
		v.fail("model.head.classes", "an integer >= 0 (0 keeps the model's classifier)", strconv.Itoa(m.Head.Classes))
	}
	atMost(v, "model.head.classes", m.Head.Classes, maxClasses)
	for i, g := range m.Freeze {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			v.fail(fmt.Sprintf("model.freeze[%d]", i), "a glob pattern of parameter names (*, ?, [...])", strconv.Quote(g))
		}
	}
	if v.c.Task == "regression" && m.Classes > 1 {
		v.fail("model.classes", "0 or 1 for task regression (the model predicts one number)", strconv.Itoa(m.Classes))
	}
	switch m.Name {
	case "resnet":
		if len(m.Blocks) == 0 {
			v.fail("model.blocks", `a non-empty list of block counts for model "resnet", e.g. [2, 2, 2]`, "[]")
		}
		if len(m.Widths) != len(m.Blocks) {
			v.fail("model.widths", fmt.Sprintf("a list of %d widths, one per stage of model.blocks", len(m.Blocks)), fmt.Sprint(m.Widths))
		}
		blocks, counted := 0, true
		for i, b := range m.Blocks {
			key := fmt.Sprintf("model.blocks[%d]", i)
			if b < 1 {
				v.fail(key, "an integer >= 1", strconv.Itoa(b))
			}
			atMost(v, key, b, maxLayers)
			counted = counted && b >= 1 && b <= maxLayers
			blocks += b
		}
		if counted && blocks > maxLayers {
			v.tooLarge("model.blocks", fmt.Sprintf("%d blocks in all are too many", blocks), maxLayers)
		}
		for i, w := range m.Widths {
			key := fmt.Sprintf("model.widths[%d]", i)
			if w < 1 {
				v.fail(key, "an integer >= 1", strconv.Itoa(w))
			}
			atMost(v, key, w, maxWidth)
			v.layerWeights(key, "a 3×3 convolution of", w, w, 9)
		}
		v.oneOf("model.stem", m.Stem, knownStems)
	case "resnet18", "resnet34", "resnet20", "resnet56":
		v.oneOf("model.stem", m.Stem, knownStems)
	case "transformer", "charlm":
		v.atLeast1("model.dim", m.Dim)
		atMost(v, "model.dim", m.Dim, maxWidth)
		v.layerWeights("model.dim", "an attention projection of", m.Dim, m.Dim, 1)
		v.atLeast1("model.heads", m.Heads)
		if m.Heads >= 1 && m.Dim >= 1 && m.Dim%m.Heads != 0 {
			v.fail("model.heads", fmt.Sprintf("a divisor of model.dim = %d", m.Dim), strconv.Itoa(m.Heads))
		}
		v.atLeast1("model.layers", m.Layers)
		atMost(v, "model.layers", m.Layers, maxLayers)
		v.atLeast1("model.ff", m.FF)
		atMost(v, "model.ff", m.FF, maxWidth)
		v.layerWeights("model.ff", "a feed-forward layer of", m.Dim, m.FF, 1)
		if m.Name == "transformer" {
			if m.PatchSize < 0 {
				v.fail("model.patch_size", "0 (rows as tokens) or a divisor of the image size", strconv.Itoa(m.PatchSize))
			}
			atMost(v, "model.patch_size", m.PatchSize, maxImageSide)
		}
		if m.Name == "charlm" {
			v.atLeast1("model.context", m.Context)
			atMost(v, "model.context", m.Context, maxContext)
		}
	}
}

// validateData checks the data keys against the model.
func (v *configValidator) validateData() {
	c := v.c
	d := c.Data
	lm := c.Model.Name == "charlm"
	switch {
	case lm && d.Name != "text":
		v.fail("data.name", `"text" for model "charlm" (a language model trains on text)`, strconv.Quote(d.Name))
	case !lm && d.Name == "text":
		v.fail("data.name", `a data set of images or a table: data set "text" trains model "charlm" only`, strconv.Quote(d.Name))
	}
	v.oneOf("task", c.Task, knownTasks)
	if c.Task == "regression" && d.Name != "csv" {
		v.fail("task", `"classification" for data set `+strconv.Quote(d.Name)+` (regression learns the numbers of a "csv" table)`, strconv.Quote(c.Task))
	}
	switch d.Name {
	case "text":
		if len(d.Files) == 0 {
			v.fail("data.files", `a list of text files or glob patterns for data set "text"`, "[]")
		}
		v.valFraction()
	case "csv":
		v.validateTable()
	default:
		v.nonEmpty("data.dir", d.Dir, "the folder of the data set")
	}
	if d.Name == "images" {
		v.validateImages()
	}
	v.unusedDataKeys()
	if d.AugmentPad < 0 {
		v.fail("data.augment_pad", "an integer >= 0 (0: no random crop)", strconv.Itoa(d.AugmentPad))
	}
}

// unusedDataKeys reports the keys of data set "images" or "csv" given
// to another data set, which would ignore them.
func (v *configValidator) unusedDataKeys() {
	d := v.c.Data
	keys := []struct {
		owner, key string
		set        bool
		value      any
	}{
		{"images", "data.image_size", len(d.ImageSize) > 0, d.ImageSize},
		{"images", "data.channels", d.Channels != 0, d.Channels},
		{"images", "data.mean", len(d.Mean) > 0, d.Mean},
		{"images", "data.std", len(d.Std) > 0, d.Std},
		{"images", "data.stats", d.Stats != "", strconv.Quote(d.Stats)},
		{"images", "data.augment_crop", d.AugmentCrop, d.AugmentCrop},
		{"images", "data.cache", d.Cache != "auto", strconv.Quote(d.Cache)},
		{"images", "data.workers", d.Workers != 0, d.Workers},
		{"images", "data.on_bad_image", d.OnBadImage != "fail", strconv.Quote(d.OnBadImage)},
		{"csv", "data.file", d.File != "", strconv.Quote(d.File)},
		{"csv", "data.train_file", d.TrainFile != "", strconv.Quote(d.TrainFile)},
		{"csv", "data.val_file", d.ValFile != "", strconv.Quote(d.ValFile)},
		{"csv", "data.label", d.Label != "", strconv.Quote(d.Label)},
		{"csv", "data.features", len(d.Features) > 0, d.Features},
		{"csv", "data.skip_rows", d.SkipRows != 0, d.SkipRows},
		{"csv", "data.header", !d.Header, d.Header},
	}
	for _, k := range keys {
		if k.set && d.Name != k.owner {
			v.fail(k.key, fmt.Sprintf("no value for data set %q (the key is read by data set %q only)", d.Name, k.owner), fmt.Sprint(k.value))
		}
	}
}

// valFraction checks data.val_fraction, used to split off validation data.
func (v *configValidator) valFraction() {
	if f := v.c.Data.ValFraction; !(f > 0 && f < 1) {
		v.fail("data.val_fraction", "a number in (0, 1)", fmtNum(f))
	}
}

// validateImages checks the keys of data set "images".
func (v *configValidator) validateImages() {
	d := v.c.Data
	if n := len(d.ImageSize); n != 0 && n != 2 {
		v.fail("data.image_size", "[height, width], or [] for the first image's size", fmt.Sprint(d.ImageSize))
	}
	for i, s := range d.ImageSize {
		key := fmt.Sprintf("data.image_size[%d]", i)
		if s < 1 {
			v.fail(key, "an integer >= 1", strconv.Itoa(s))
		}
		atMost(v, key, s, maxImageSide)
	}
	if d.Channels != 0 && d.Channels != 1 && d.Channels != 3 {
		v.fail("data.channels", "1 (grey), 3 (RGB) or 0 (the first image's)", strconv.Itoa(d.Channels))
	}
	v.oneOf("data.stats", d.Stats, knownStats)
	if d.Stats != "" && (len(d.Mean) > 0 || len(d.Std) > 0) {
		v.fail("data.stats", `"" when data.mean and data.std are given (one or the other)`, strconv.Quote(d.Stats))
	}
	if len(d.Mean) != len(d.Std) {
		v.fail("data.std", fmt.Sprintf("as many values as data.mean (%d)", len(d.Mean)), fmt.Sprint(d.Std))
	}
	for _, key := range []struct {
		name string
		vals []float64
	}{{"data.mean", d.Mean}, {"data.std", d.Std}} {
		if n := len(key.vals); n > 1 && d.Channels != 0 && n != d.Channels {
			v.fail(key.name, fmt.Sprintf("1 or %d values (data.channels)", d.Channels), fmt.Sprint(key.vals))
		}
		if n := len(key.vals); n != 0 && n != 1 && n != 3 {
			v.fail(key.name, "one value per channel (1 or 3), or one for all", fmt.Sprint(key.vals))
		}
	}
	for i, s := range d.Std {
		if !(s > 0) {
			v.fail(fmt.Sprintf("data.std[%d]", i), "a number > 0", fmtNum(s))
		}
	}
	v.oneOf("data.cache", d.Cache, knownCaches)
	v.oneOf("data.on_bad_image", d.OnBadImage, knownBadImage)
	if d.Workers < 0 {
		v.fail("data.workers", "an integer >= 0 (0 uses every core)", strconv.Itoa(d.Workers))
	}
	atMost(v, "data.workers", d.Workers, maxThreads)
	if s := d.AugmentScale; !(s[0] > 0 && s[0] <= s[1] && s[1] <= 1) {
		v.fail("data.augment_scale", "[min, max] with 0 < min <= max <= 1", fmt.Sprint(s[:]))
	}
	if r := d.AugmentRatio; !(r[0] > 0 && r[0] <= r[1]) {
		v.fail("data.augment_ratio", "[min, max] with 0 < min <= max", fmt.Sprint(r[:]))
	}
	v.valFraction() // used when the folder has no val/ (nor test/)
}

// validateTable checks the keys of data set "csv".
func (v *configValidator) validateTable() {
	d := v.c.Data
	switch {
	case d.File == "" && d.TrainFile == "":
		v.fail("data.file", `a CSV file for data set "csv" (or data.train_file and data.val_file)`, `""`)
	case d.File != "" && (d.TrainFile != "" || d.ValFile != ""):
		v.fail("data.file", `"" when data.train_file and data.val_file name the tables (one or the other)`, strconv.Quote(d.File))
	case d.File == "" && d.ValFile == "":
		v.fail("data.val_file", "the validation table that goes with data.train_file", `""`)
	case d.File != "":
		v.valFraction()
	}
	v.nonEmpty("data.label", d.Label, `the column to predict: its name in the header, or its index (-1: the last)`)
	if d.SkipRows < 0 {
		v.fail("data.skip_rows", "an integer >= 0", strconv.Itoa(d.SkipRows))
	}
}

// configValidator collects the problems Validate finds.
type configValidator struct {
	c        *Config
	errs     []error
	reported map[string]bool // the keys with a problem recorded
}

// fail records that key holds found where expected was expected, unless
// a problem of key is already recorded.
func (v *configValidator) fail(key, expected, found string) {
	v.report(key, "expected "+expected+", found "+found)
}

// report records the problem of key, unless one is already recorded.
func (v *configValidator) report(key, problem string) {
	if v.reported[key] {
		return
	}
	if v.reported == nil {
		v.reported = map[string]bool{}
	}
	v.reported[key] = true
	where, suffix := v.c.origins.Where(v.c.path, key)
	v.errs = append(v.errs, fmt.Errorf("%s: %s: %s%s", where, key, problem, suffix))
}

// tooLarge records that key holds what is too large, at most limit.
func (v *configValidator) tooLarge(key, what string, limit int64) {
	v.report(key, fmt.Sprintf("%s; at most %d", what, limit))
}

// atMost records that key's value x is too large when it is over limit.
func atMost[T int | int64 | float64](v *configValidator, key string, x, limit T) {
	if x > limit {
		v.report(key, fmt.Sprintf("%v is too large; at most %v", x, limit))
	}
}

// layerWeights records that key makes a layer (what: "a feed-forward
// layer of") of rows × cols × kernel weights too large for
// maxLayerWeights. Values out of their own bounds are left to those.
func (v *configValidator) layerWeights(key, what string, rows, cols, kernel int) {
	if rows < 1 || cols < 1 || rows > maxWidth || cols > maxWidth {
		return
	}
	n := int64(rows) * int64(cols) * int64(kernel)
	if n > maxLayerWeights {
		dims := fmt.Sprintf("%d × %d", rows, cols)
		if kernel > 1 {
			dims += fmt.Sprintf(" × %d", kernel)
		}
		v.tooLarge(key, fmt.Sprintf("%s %s = %d weights is too large", what, dims, n), maxLayerWeights)
	}
}

// validateHidden checks the layers of "mlp": their count, widths and
// weights (from one layer to the next, and from the last to the classes).
func (v *configValidator) validateHidden() {
	m := v.c.Model
	if n := len(m.Hidden); n > maxLayers {
		v.tooLarge("model.hidden", fmt.Sprintf("%d layers are too many", n), maxLayers)
	}
	for i, h := range m.Hidden {
		key := fmt.Sprintf("model.hidden[%d]", i)
		if h < 1 {
			v.fail(key, "a layer width >= 1", strconv.Itoa(h))
		}
		atMost(v, key, h, maxWidth)
		if i > 0 {
			v.layerWeights(key, "a layer of", m.Hidden[i-1], h, 1)
		}
	}
	if n := len(m.Hidden); n > 0 && m.Classes > 0 && m.Classes <= maxClasses {
		v.layerWeights("model.classes", "a classifier of", m.Hidden[n-1], m.Classes, 1)
	}
}

// finite checks that the numbers of the section s, at key prefix, are
// finite: a file cannot hold NaN or infinities, but a configuration built
// in Go can.
func (v *configValidator) finite(s reflect.Value, prefix string) {
	for i := range s.NumField() {
		name := strictyaml.FieldKey(s.Type().Field(i))
		if name == "" {
			continue
		}
		key, f := strictyaml.JoinPath(prefix, name), s.Field(i)
		switch {
		case f.Kind() == reflect.Struct:
			v.finite(f, key)
		case f.Kind() == reflect.Float64:
			v.finiteNum(key, f.Float())
		case (f.Kind() == reflect.Slice || f.Kind() == reflect.Array) && f.Type().Elem().Kind() == reflect.Float64:
			for j := range f.Len() {
				v.finiteNum(fmt.Sprintf("%s[%d]", key, j), f.Index(j).Float())
			}
		}
	}
}

// finiteNum records x, the value of key, unless it is finite.
func (v *configValidator) finiteNum(key string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.fail(key, "a finite number", fmtNum(x))
	}
}

func (v *configValidator) oneOf(key, val string, known []string) {
	for _, k := range known {
		if val == k {
			return
		}
	}
	v.fail(key, "one of "+strings.Join(known, ", "), strconv.Quote(val))
}

func (v *configValidator) nonEmpty(key, val, expected string) {
	if strings.TrimSpace(val) == "" {
		v.fail(key, expected, strconv.Quote(val))
	}
}

func (v *configValidator) positive(key string, x float64) {
	if !(x > 0) {
		v.fail(key, "a number > 0", fmtNum(x))
	}
}

func (v *configValidator) atLeast0(key string, x float64) {
	if !(x >= 0) {
		v.fail(key, "a number >= 0", fmtNum(x))
	}
}

func (v *configValidator) atLeast1(key string, n int) {
	if n < 1 {
		v.fail(key, "an integer >= 1", strconv.Itoa(n))
	}
}

// inRange checks lo <= x < hi, or lo <= x <= hi when closed.
func (v *configValidator) inRange(key string, x, lo, hi float64, closed bool) {
	if x >= lo && (x < hi || closed && x == hi) {
		return
	}
	bracket := ")"
	if closed {
		bracket = "]"
	}
	v.fail(key, fmt.Sprintf("a number in [%s, %s%s", fmtNum(lo), fmtNum(hi), bracket), fmtNum(x))
}

// fmtNum formats a number for a message.
func fmtNum(x float64) string {
	return strconv.FormatFloat(x, 'g', -1, 64)
}

package train

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/internal/strictyaml"
	"github.com/hora-dl/hora/layers"
)

// ModelInput is what a model builder registered with RegisterModel knows
// about the run when it builds the model.
type ModelInput struct {
	// SampleShape is the shape of one training sample, e.g. [1 28 28]
	// for Fashion-MNIST's images.
	SampleShape []int
	// Classes is the number of classes the model must give a logit for.
	Classes int
	// Rand is the run's random generator, seeded by the config's seed:
	// initialise the weights from it, so that runs repeat exactly.
	Rand *rand.Rand
	// Config is the whole configuration of the run.
	Config *Config
}

// Data is what a data set gives the trainer: the training and test sets of
// labelled samples and their number of classes.
type Data struct {
	// Train is the training set; Test the set evaluated after each epoch.
	Train, Test data.Dataset
	// Classes is the number of classes; labels are 0..Classes-1.
	Classes int
}

// ArgsDefaulter is implemented by the args struct of a registered model or
// data set (through a pointer) that has defaults: SetDefaults runs before
// the config's keys are decoded, so keys the config leaves out keep them.
type ArgsDefaulter interface{ SetDefaults() }

// ArgsValidator is implemented by an args struct that checks its values
// after decoding; the error is reported with the config file and key.
type ArgsValidator interface{ Validate() error }

// registered is a model or data set a program registered: decode makes
// its args value from the config, build builds it from them.
type registered[B any] struct {
	decode func(cfg *Config) (any, error)
	build  B
}

// registry holds the models (or the data sets) programs registered, next
// to the built-in names they must not take.
type registry[B any] struct {
	kind    string // "model" or "data set", for messages
	builtin []string
	mu      sync.RWMutex
	entries map[string]registered[B]
}

var (
	modelRegistry = &registry[func(args any, in ModelInput) (layers.Layer, error)]{
		kind: "model", builtin: builtinModels, entries: map[string]registered[func(any, ModelInput) (layers.Layer, error)]{}}
	datasetRegistry = &registry[func(args any, cfg *Config) (*Data, error)]{
		kind: "data set", builtin: builtinDatasets, entries: map[string]registered[func(any, *Config) (*Data, error)]{}}
)

// add registers e under name; it panics when the name is empty or taken.
func (r *registry[B]) add(name string, e registered[B]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.entries[name]; name == "" || taken || slices.Contains(r.builtin, name) {
		panic(fmt.Sprintf("train: registering %s name %q: the name is empty or taken", r.kind, name))
	}
	r.entries[name] = e
}

// lookup returns the registered entry called name.
func (r *registry[B]) lookup(name string) (registered[B], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e, ok
}

// remove drops the entry called name (for tests).
func (r *registry[B]) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, name)
}

// names returns the built-in names followed by the registered ones,
// sorted, for messages.
func (r *registry[B]) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	extra := make([]string, 0, len(r.entries))
	for name := range r.entries {
		extra = append(extra, name)
	}
	sort.Strings(extra)
	return append(slices.Clone(r.builtin), extra...)
}

// RegisterModel makes the model that build returns available to configs as
// model.name: name — to the command of a program that calls Main, and to
// Fit. The model's own keys sit under model.args in the config and are
// decoded strictly into a value of type A (a struct with yaml tags), with
// the same file:line errors as every other key; -set model.args.KEY=VALUE
// overrides them. If *A implements ArgsDefaulter its defaults apply, and
// if A (or *A) implements ArgsValidator its Validate runs before training.
//
// build must return a model whose Forward maps a batch of samples
// [batch, SampleShape...] to logits [batch, Classes]; it should initialise
// the weights from in.Rand. RegisterModel panics if name is empty or is
// already a model's name (built-in or registered): call it from main or
// init, before Main.
func RegisterModel[A any](name string, build func(args A, in ModelInput) (layers.Layer, error)) {
	if build == nil {
		panic("train: RegisterModel: nil builder for model " + name)
	}
	modelRegistry.add(name, registered[func(any, ModelInput) (layers.Layer, error)]{
		decode: func(cfg *Config) (any, error) { return decodeArgs[A](cfg, &cfg.Model.Args, "model.args") },
		build:  func(args any, in ModelInput) (layers.Layer, error) { return build(args.(A), in) },
	})
}

// RegisterDataset makes the data set that load returns available to
// configs as data.name: name. Its own keys sit under data.args, decoded
// strictly into a value of type A as RegisterModel's model.args are. load
// runs once per process (every rank of a data-parallel run loads the
// whole data set; the trainer shards it). RegisterDataset panics if name
// is empty or already a data set's name.
func RegisterDataset[A any](name string, load func(args A, cfg *Config) (*Data, error)) {
	if load == nil {
		panic("train: RegisterDataset: nil loader for data set " + name)
	}
	datasetRegistry.add(name, registered[func(any, *Config) (*Data, error)]{
		decode: func(cfg *Config) (any, error) { return decodeArgs[A](cfg, &cfg.Data.Args, "data.args") },
		build:  func(args any, cfg *Config) (*Data, error) { return load(args.(A), cfg) },
	})
}

// decodeArgs decodes the config's raw args at path ("model.args") into a
// new A: its defaults, then the keys of the file and of -set, then its own
// validation.
func decodeArgs[A any](cfg *Config, raw *strictyaml.Raw, path string) (any, error) {
	args := new(A)
	if d, ok := any(args).(ArgsDefaulter); ok {
		d.SetDefaults()
	}
	if err := raw.DecodeInto(args, path, cfg.origins); err != nil {
		return nil, err
	}
	v, ok := any(*args).(ArgsValidator)
	if !ok {
		v, ok = any(args).(ArgsValidator)
	}
	if ok {
		if err := v.Validate(); err != nil {
			where, suffix := cfg.origins.Where(cfg.path, path)
			return nil, fmt.Errorf("%s: %s: %w%s", where, path, err, suffix)
		}
	}
	return *args, nil
}

// validateArgs decodes model.args and data.args for the registered model
// and data set the config names (so that their errors come with the
// config's, before anything runs), and rejects them for built-in ones.
func (v *configValidator) validateArgs() {
	c := v.c
	if m, ok := modelRegistry.lookup(c.Model.Name); ok && !c.modelGiven {
		if _, err := m.decode(c); err != nil {
			v.errs = append(v.errs, err)
		}
	} else if !c.Model.Args.IsZero() {
		v.fail("model.args", fmt.Sprintf("no keys for model %q (only a model registered with train.RegisterModel takes model.args)", c.Model.Name), "a mapping")
	}
	if d, ok := datasetRegistry.lookup(c.Data.Name); ok && !c.dataGiven {
		if _, err := d.decode(c); err != nil {
			v.errs = append(v.errs, err)
		}
	} else if !c.Data.Args.IsZero() {
		v.fail("data.args", fmt.Sprintf("no keys for data set %q (only a data set registered with train.RegisterDataset takes data.args)", c.Data.Name), "a mapping")
	}
}

package train

// Fault injection, for the tests that kill a run at a chosen moment (the
// resume and restart tests). It is compiled in only with the build tag
// horafault (fault_inject.go), which those tests build the train command
// with; a release build ignores HORA_FAULT.
//
// faultStep, when positive, is the optimizer step before which the
// process kills itself (on rank faultRank, or every rank when it is
// negative); faultAtStart kills it once the run folder is claimed, before
// config.yaml is written; faultHook (ckpt.go), when set, is called between the steps
// of writing a checkpoint.
var (
	faultStep    = 0
	faultRank    = -1
	faultAtStart = false
)

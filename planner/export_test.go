package planner

import "runtime"

// ReferenceMake is Make as it was before its workers (referenceMake).
var ReferenceMake = referenceMake

// PlanInBlocks makes Make's workers take n nodes at a time with up to procs of them, until the returned
// function restores both. Tests that call it must not run in parallel.
func PlanInBlocks(n, procs int) (restore func()) {
	was, wasProcs := planBlock, runtime.GOMAXPROCS(procs)
	planBlock = n
	return func() { planBlock = was; runtime.GOMAXPROCS(wasProcs) }
}

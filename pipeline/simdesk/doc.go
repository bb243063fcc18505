// Package simdesk is cualake's embedded desktop simulator: a deterministic
// state machine with five apps (Files, Text Editor, Sheet, Settings, Mail)
// in windows with focus, menus, dialogs and scrolling, observed as real
// screenshots (16-colour PNG rendered with the X11 7x13 font) and as an
// accessibility tree (JSON), and driven by the ScaleCUA/OSWorld action
// space on a 1000x1000 grid (package action).
//
// Around the simulator:
//   - Env is the environment interface of the rollout stage; Sim implements
//     it in-process and package osworld over OSWorld's HTTP API (a real VM,
//     or this simulator behind package server).
//   - Tasks are rows of schemas.Task with setup steps (ApplySetup,
//     CheckSetup) and declarative judges (package judge); Pool returns the
//     built-in pool of parameterised task families, Knowledge the per-app
//     documents the synthesize stage reads, CheckTask the static rule check.
//   - Oracle plans from a task's judge and the live state, so any task the
//     planner understands, built-in or synthesized, has a solver;
//     RandomPolicy is the baseline.
//   - State is plain data: MarshalState and RestoreState give deterministic
//     JSON, and identical states render identical bytes.
//
// Nothing here starts goroutines, reads clocks or iterates maps into output.
package simdesk

// Package verify is cualake's proactive verifier (VeriCUA, sections 2.2 to
// 2.4): a Judge writes concrete success criteria for a finished episode from
// its instruction, action history and last screenshots, marks each success,
// failure or uncertain, and, while some stay uncertain and the budget allows
// (K = 2 rounds of at most 15 GUI steps), a Probe inspects the live terminal
// environment restored from the episode's final-state blob, read-only, and
// reports updated statuses with evidence screenshots. The verdict is scored
// against the executable outcome with VeriCUA's terminal reward schedule
// (table 9).
//
// Strategies: passive (screenshots only, the baseline), builtin (the
// prompted, untrained policy over the simulator's GUI), trained (the same
// Judge with a learned stopping and check-ordering policy, see Train) and
// openai (Judge and Probe on an OpenAI-compatible endpoint with strict JSON
// replies). Verifier implements rollout.Verifier; Stage verifies the
// trajectories of a snapshot.
package verify

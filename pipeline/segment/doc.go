// Package segment is the segment stage: it turns rollout trajectories into
// training items (the segments table) under one of three context regimes.
//
//   - trajectory: one item per trajectory, the whole conversation (O(n)
//     items for n trajectories).
//   - step: one item per turn, the context the policy saw under a sliding
//     window of w turns, older turns reduced to compact action history
//     (EvoCUA-1.5 eq. 4); O(nT) items.
//   - window: Visual Context Segmentation (ScaleCUA section 3.4, appendix C.1
//     Algorithm 2): a token-ID stream that keeps at most K + Delta
//     screenshots, saved and restarted from the K most recent ones whenever
//     it would hold more; O(nT/K) items.
//
// Every response token is trainable (loss mask 1) in exactly one item, with
// the log-probability the rollout engine recorded for it. Recorded response
// ids are never re-tokenized; context (template text, older responses,
// summaries) is tokenized with mask 0. Observations are appended to a stream
// as the token diff Tokenize(H + o)[len(Tokenize(H)):], which the Stream type
// computes exactly and, at the chat template's special-token boundaries,
// without re-tokenizing the history.
//
// The package is split in layers, each testable alone: Stream (the token-ID
// stream and its diff rule), the mode algorithms over pre-tokenized pieces
// (Segment), the rendering of lake rows into pieces (Builder) and the stage
// itself (Run), which streams the trajectories and steps tables, segments
// trajectories in parallel and writes segments in key order, so its output
// does not depend on the number of workers.
package segment

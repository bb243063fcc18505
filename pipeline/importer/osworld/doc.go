// Package osworld reads OSWorld's files: task definitions in the
// evaluation_examples layout and run folders with traj.jsonl, screenshots
// and result.txt. Parsers (ParseTask, ParseIndex, ParseTrajLine,
// ParseResult) are pure functions from bytes to rows; ReadTasks and
// ReadResults walk a folder and hand what they parse to a record.Sink.
//
// # Tasks
//
// examples/<domain>/<id>.json becomes one tasks row: task_id = id, domain =
// the folder (OSWorld's "snapshot" field is not reliable), instruction,
// setup = config (compact JSON; [] when absent), judge = evaluator (compact
// JSON, func a string or a list with parallel result/expected/options and
// conj), feasible = func != "infeasible", abilities = related_apps, app =
// related_apps[0] or the domain, source = "imported", origin = the file's
// path under the imported folder, raw = the file's bytes. Every other field
// (snapshot, source, trajectory, proxy, fixed_ip, possibility_of_env_change,
// hint, postconfig inside the evaluator, fields OSWorld adds later) lives on
// in raw, which the exporter writes back byte for byte.
//
// # Run folders
//
// <action_space>/<observation_type>/<model>/<domain>/<example_id>/ becomes
// one trajectory: trajectory_id = "osw-" + a hash of those five names and
// the first action's timestamp (so two runs of one model on one task stored
// in different trees stay apart, and re-importing a tree adds nothing),
// task_id = example_id, policy = model, group_id = example_id@model, source
// = "osworld", reward = result.txt, outcome success (reward > 0) or failure,
// or error when traj.jsonl holds an {"Error": ...} line or result.txt is
// missing (the run stopped before evaluation). judge_detail holds the
// folder path, action space, observation type, result.txt as written, the
// blob hash of the last screenshot (the screen the evaluator judged), of
// runtime.log (stored as a text blob), and the size of recording.mp4 (not
// stored: videos are large).
//
// Each traj.jsonl line becomes one steps row per action it performed:
// step = step_num, sub = the action's index among the actions of that
// step_num (one response, several actions: OSWorld repeats step_num, and
// one pyautogui script may hold several calls), typed action parsed from
// the pyautogui string by the simulator's parser
// (simdesk/action.ParsePyAutoGUISteps: folded to the fewest actions with
// the same effect, so a trailing time.sleep or a moveTo before a dragTo
// adds no row) or from the computer_13 object (action.ParseComputer13);
// one row of kind "unknown" when it does not parse or performs nothing.
// The rows of a line share raw_action (the line's text), response,
// timestamp = action_timestamp and info = the line's remaining fields as a
// JSON object ({"info": ..., "natural_language_action": ...}); reward and
// done go on its last row. OSWorld saves the screenshot taken
// after each action; observation is the screen the policy saw when it
// wrote the response: the screenshot of the last line of the previous
// step_num (empty for the first response unless a step_0*.png exists).
// Pixel coordinates map to the 1000x1000 grid through that screenshot's
// size.
package osworld

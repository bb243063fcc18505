"""A verl reward function for cualake's computer-use datasets.

Point verl's ``custom_reward_function`` at this file::

    custom_reward_function.path=examples/verl/cualake_reward.py
    custom_reward_function.name=compute_score

verl calls ``compute_score(data_source, solution_str, ground_truth,
extra_info)`` for each generated response. Rows of ``cualake export verl``
carry ``data_source = "cualake/<domain>"`` (verl's default_compute_score
knows none of them and raises NotImplementedError), the task's judge as
``reward_model.ground_truth`` and the task's setup and environment seed in
``extra_info``.

Two ways to score, chosen by environment variables:

``CUALAKE_SIMDESK_URL=http://127.0.0.1:5000`` (``cualake simdesk serve``)
    The response is read as a plan: every line ``Action: <action>`` in the
    rollout policy's compact form (``click 512 300``, ``type hello``,
    ``hotkey ctrl s``, ``done``; lines without the prefix count when no line
    has it). The desktop is reset to the row's initial state (its setup and
    seed, the state its screenshot shows), each action runs as the
    pyautogui command cualake's OSWorld client sends, and the task's judge
    scores the final state: 1.0 or 0.0. Actions that do not parse, or that
    the desktop refuses, are no-ops, as in a rollout. One server holds one
    desktop: give each reward worker its own server.

``CUALAKE_VERDICTS=verdicts.json`` (``cualake export verdicts``)
    The reward cualake recorded for the row's ``extra_info.trajectory_id``:
    for rows that stand for recorded rollouts (offline RL, replays). A row
    without that id, or an id the file lacks, is an error naming it.

Only Python's standard library is used.
"""

import json
import os
import urllib.error
import urllib.request

GRID = 1000  # actions use a 1000x1000 grid over the screen
# What cualake's OSWorld client (and OSWorld's PythonController) puts before
# every pyautogui command.
PY_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
DATA_SOURCE_PREFIX = "cualake/"
VERDICTS_FORMAT = "cualake-verdicts/1"


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """Score one response; see the module's documentation."""
    if not str(data_source).startswith(DATA_SOURCE_PREFIX):
        raise ValueError("cualake_reward scores cualake rows (data_source %s*), not %r" % (DATA_SOURCE_PREFIX, data_source))
    extra_info = dict(extra_info or {})
    url = os.environ.get("CUALAKE_SIMDESK_URL")
    if url:
        return score_on_simdesk(url, solution_str, ground_truth, extra_info)
    verdicts = os.environ.get("CUALAKE_VERDICTS")
    if verdicts:
        return score_from_verdicts(verdicts, extra_info)
    raise RuntimeError("cualake_reward: set CUALAKE_SIMDESK_URL (a `cualake simdesk serve` URL) "
                       "or CUALAKE_VERDICTS (a file from `cualake export verdicts`)")


# --- the simulator -------------------------------------------------------

def to_pixel(g, size):
    """The grid-to-pixel mapping of cualake's action package (action.ToPixel)."""
    return min(max(g * size // GRID, 0), size - 1)


def unescape(s):
    """Undo the compact form's escapes in `type` text: \\n, \\t, \\r, \\\\."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(s[i + 1], "\\" + s[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def plan_lines(solution_str):
    """The action lines of a response: its `Action:` lines, else every line."""
    lines = [l.strip() for l in str(solution_str).splitlines()]
    marked = [l[len("Action:"):].strip() for l in lines if l.startswith("Action:")]
    return marked if marked else [l for l in lines if l]


def pyautogui_command(line, width, height):
    """One compact action as (pyautogui code, terminal): code None for wait,
    terminal "done"/"fail" for those. Raises ValueError for a line that is
    not an action, as cualake's action.Parse refuses it."""
    verb, _, rest = line.partition(" ")
    if verb == "type":
        if not rest:
            raise ValueError("type needs text")
        return "pyautogui.typewrite(%r)" % unescape(rest), None
    args = rest.split()

    def ints(n):
        if len(args) != n:
            raise ValueError("%s takes %d numbers" % (verb, n))
        return [int(a) for a in args]

    def px(x, y):
        return "%d, %d" % (to_pixel(x, width), to_pixel(y, height))

    pointer = {"click": "click", "right_click": "rightClick", "middle_click": "middleClick",
               "double_click": "doubleClick", "triple_click": "tripleClick", "move": "moveTo"}
    if verb in pointer:
        x, y = ints(2)
        return "pyautogui.%s(%s)" % (pointer[verb], px(x, y)), None
    if verb == "drag":
        x, y, x2, y2 = ints(4)
        return "pyautogui.moveTo(%s); pyautogui.dragTo(%s, duration=0.5, button='left')" % (px(x, y), px(x2, y2)), None
    if verb == "key":
        if not 1 <= len(args) <= 2:
            raise ValueError("key takes a key name and an optional count")
        if len(args) == 2 and int(args[1]) > 1:
            return "pyautogui.press(%r, presses=%d)" % (args[0], int(args[1])), None
        return "pyautogui.press(%r)" % args[0], None
    if verb == "hotkey":
        if not args:
            raise ValueError("hotkey needs keys")
        return "pyautogui.hotkey(%s)" % ", ".join(repr(k) for k in args), None
    if verb == "scroll":
        if len(args) not in (2, 4) or args[0] not in ("up", "down", "left", "right"):
            raise ValueError("scroll takes a direction, an amount and an optional X Y")
        n = int(args[1])
        fn, n = {"up": ("scroll", n), "down": ("scroll", -n), "left": ("hscroll", -n), "right": ("hscroll", n)}[args[0]]
        if len(args) == 4:
            return "pyautogui.%s(%d, x=%d, y=%d)" % (fn, n, to_pixel(int(args[2]), width), to_pixel(int(args[3]), height)), None
        return "pyautogui.%s(%d)" % (fn, n), None
    if verb in ("wait", "done", "fail") and not args:
        return None, (verb if verb != "wait" else None)
    raise ValueError("unknown action %r" % line)


def _post(url, path, body):
    req = urllib.request.Request(url.rstrip("/") + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=float(os.environ.get("CUALAKE_TIMEOUT", "60"))) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        payload = e.read()
        try:
            return e.code, json.loads(payload)
        except ValueError:
            return e.code, {"message": payload.decode(errors="replace")}


def score_on_simdesk(url, solution_str, ground_truth, extra_info):
    """Replay the response's plan on `cualake simdesk serve` and judge it."""
    for key in ("setup", "seed"):
        if key not in extra_info:
            raise KeyError("extra_info has no %r: export the dataset with `cualake export verl` (not --text-only)" % key)
    code, reply = _post(url, "/simdesk/reset", {"seed": int(extra_info["seed"]), "setup": json.loads(extra_info["setup"] or "[]")})
    if code != 200:
        raise RuntimeError("simdesk reset of task %s: HTTP %d: %s" % (extra_info.get("task_id"), code, reply.get("message")))
    code, size = _post(url, "/screen_size", {})
    if code != 200:
        raise RuntimeError("simdesk screen_size: HTTP %d" % code)
    width, height = int(size["width"]), int(size["height"])
    terminal = ""
    limit = int(os.environ.get("CUALAKE_MAX_ACTIONS", "50"))
    for line in plan_lines(solution_str)[:limit]:
        try:
            cmd, term = pyautogui_command(line, width, height)
        except ValueError:
            continue  # an unparseable action is a no-op, as in a rollout
        if term:
            terminal = term
            break
        if cmd is None:
            continue
        code, reply = _post(url, "/execute", {"command": ["python", "-c", PY_PREFIX + cmd]})
        # A command the desktop refuses (HTTP 500 with its reason, as
        # OSWorld's server answers, or a non-zero return code) is the model's
        # mistake: a no-op. Anything else is the server's failure.
        if code != 200 and not (code == 500 and reply.get("message")):
            raise RuntimeError("simdesk execute %r: HTTP %d: %s" % (line, code, reply))
    code, reply = _post(url, "/simdesk/evaluate", {"judge": ground_truth, "terminal": terminal})
    if code != 200:
        raise RuntimeError("simdesk evaluate of task %s: HTTP %d: %s" % (extra_info.get("task_id"), code, reply.get("message")))
    return float(reply["score"])


# --- recorded verdicts ---------------------------------------------------

_verdicts_cache = {}


def load_verdicts(path):
    """Read a verdicts file once per (path, modification time)."""
    key = (path, os.stat(path).st_mtime_ns)
    if key not in _verdicts_cache:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("format") != VERDICTS_FORMAT:
            raise ValueError("%s is not a cualake verdicts file (format %r, want %r)" % (path, data.get("format"), VERDICTS_FORMAT))
        _verdicts_cache.clear()
        _verdicts_cache[key] = data["trajectories"]
    return _verdicts_cache[key]


def score_from_verdicts(path, extra_info):
    """The recorded reward of the row's trajectory."""
    tid = extra_info.get("trajectory_id")
    if not tid:
        raise KeyError("extra_info has no trajectory_id to look up in %s" % path)
    verdicts = load_verdicts(path)
    if tid not in verdicts:
        raise KeyError("trajectory %s is not in %s" % (tid, path))
    return float(verdicts[tid]["reward"])

#!/usr/bin/env python3
"""Drive an OSWorld desktop server as OSWorld's own harness does.

This script sends the HTTP requests that OSWorld's PythonController
(desktop_env/controllers/python.py) and SetupController
(desktop_env/controllers/setup.py) send, written from their documented
behaviour (it is not their code): screenshots, the accessibility tree
(parsed with xml.etree and linearised as OSWorld's agents do), pyautogui
commands through /execute for every execute_action type, the platform
queries, files, directory trees, and the setup endpoints (upload, execute,
launch, open, activate and close windows, execute with verification).

Point it at `cualake simdesk serve` (or an OSWorld VM) and it prints one
JSON object: {"ok": bool, "checks": [{"name", "ok", "detail"}], "at": the
tree it read, "linearized": its linearisation}; it exits 1 if a check
failed. Only python3 and python3-requests are needed.

    cualake simdesk serve --port 5000 &
    python3 examples/osworld/controller.py http://127.0.0.1:5000
"""

import json
import os
import random
import struct
import sys
import xml.etree.ElementTree as ET

import requests

# What PythonController puts before every pyautogui command.
PKGS_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"

STATE_NS = "https://accessibility.ubuntu.example.org/ns/state"
COMPONENT_NS = "https://accessibility.ubuntu.example.org/ns/component"
VALUE_NS = "https://accessibility.ubuntu.example.org/ns/value"
# OSWorld's agents read attributes through the Windows namespace on every
# platform, so Ubuntu trees give empty class and description columns.
ATTRIBUTES_NS = "https://accessibility.windows.example.org/ns/attributes"
CLASS_NS = "https://accessibility.windows.example.org/ns/class"

TIMEOUT = 30


class Controller:
    """The requests of PythonController."""

    def __init__(self, base):
        self.base = base.rstrip("/")

    def get_screenshot(self):
        r = requests.get(self.base + "/screenshot", timeout=TIMEOUT)
        return r.content if r.status_code == 200 else None

    def get_accessibility_tree(self):
        r = requests.get(self.base + "/accessibility", timeout=TIMEOUT)
        return r.json()["AT"] if r.status_code == 200 else None

    def get_terminal_output(self):
        r = requests.get(self.base + "/terminal", timeout=TIMEOUT)
        return r.json()["output"] if r.status_code == 200 else None

    def get_file(self, file_path):
        r = requests.post(self.base + "/file", data={"file_path": file_path}, timeout=TIMEOUT)
        return r.content if r.status_code == 200 else None

    def execute_python_command(self, command):
        payload = json.dumps({"command": ["python", "-c", PKGS_PREFIX.format(command=command)], "shell": False})
        r = requests.post(self.base + "/execute", headers={"Content-Type": "application/json"}, data=payload, timeout=TIMEOUT)
        return r.json() if r.status_code == 200 else None

    def get_vm_platform(self):
        return self.execute_python_command("import platform; print(platform.system())")["output"].strip()

    def get_vm_machine(self):
        return self.execute_python_command("import platform; print(platform.machine())")["output"].strip()

    def get_vm_screen_size(self):
        r = requests.post(self.base + "/screen_size", timeout=TIMEOUT)
        return r.json() if r.status_code == 200 else None

    def get_vm_window_size(self, app_class_name):
        r = requests.post(self.base + "/window_size", data={"app_class_name": app_class_name}, timeout=TIMEOUT)
        return r.json() if r.status_code == 200 else None

    def get_vm_desktop_path(self):
        r = requests.post(self.base + "/desktop_path", timeout=TIMEOUT)
        return r.json()["desktop_path"] if r.status_code == 200 else None

    def get_vm_directory_tree(self, path):
        r = requests.post(self.base + "/list_directory", headers={"Content-Type": "application/json"},
                          data=json.dumps({"path": path}), timeout=TIMEOUT)
        return r.json()["directory_tree"] if r.status_code == 200 else None

    def execute_action(self, action):
        """Sends an action of OSWorld's computer_13 space as PythonController
        writes it; returns the /execute reply (None for WAIT, FAIL, DONE)."""
        if action in ("WAIT", "FAIL", "DONE"):
            return None
        kind = action["action_type"]
        p = action.get("parameters", {k: v for k, v in action.items() if k != "action_type"})
        move_mode = random.choice(["pyautogui.easeInQuad", "pyautogui.easeOutQuad", "pyautogui.easeInOutQuad",
                                   "pyautogui.easeInBounce", "pyautogui.easeInElastic"])
        duration = random.uniform(0.5, 1)
        if kind == "MOVE_TO":
            cmd = "pyautogui.moveTo()" if not p else "pyautogui.moveTo({}, {}, {}, {})".format(p["x"], p["y"], duration, move_mode)
        elif kind == "CLICK":
            args = []
            if "button" in p:
                args.append("button='{}'".format(p["button"]))
            if "x" in p and "y" in p:
                args += ["x={}".format(p["x"]), "y={}".format(p["y"])]
            if "num_clicks" in p:
                args.append("clicks={}".format(p["num_clicks"]))
            cmd = "pyautogui.click({})".format(", ".join(args))
        elif kind in ("MOUSE_DOWN", "MOUSE_UP"):
            fn = "mouseDown" if kind == "MOUSE_DOWN" else "mouseUp"
            cmd = "pyautogui.{}(button='{}')".format(fn, p["button"]) if "button" in p else "pyautogui.{}()".format(fn)
        elif kind in ("RIGHT_CLICK", "DOUBLE_CLICK"):
            fn = "rightClick" if kind == "RIGHT_CLICK" else "doubleClick"
            cmd = "pyautogui.{}(x={}, y={})".format(fn, p["x"], p["y"]) if "x" in p else "pyautogui.{}()".format(fn)
        elif kind == "DRAG_TO":
            cmd = "pyautogui.dragTo({}, {}, duration=1.0, button='left', mouseDownUp=True)".format(p["x"], p["y"])
        elif kind == "SCROLL":
            reply = None
            if "dx" in p:
                reply = self.execute_python_command("pyautogui.hscroll({})".format(p["dx"]))
            if "dy" in p:
                reply = self.execute_python_command("pyautogui.vscroll({})".format(p["dy"]))
            return reply
        elif kind == "TYPING":
            cmd = "pyautogui.typewrite({})".format(repr(p["text"]))
        elif kind == "PRESS":
            cmd = "pyautogui.press('{}')".format(p["key"])
        elif kind == "KEY_DOWN":
            cmd = "pyautogui.keyDown('{}')".format(p["key"])
        elif kind == "KEY_UP":
            cmd = "pyautogui.keyUp('{}')".format(p["key"])
        elif kind == "HOTKEY":
            cmd = "pyautogui.hotkey('{}')".format("', '".join(p["keys"]))
        elif kind in ("WAIT", "FAIL", "DONE"):
            return None
        else:
            raise ValueError("unknown action type " + kind)
        return self.execute_python_command(cmd)


class Setup:
    """The requests of SetupController."""

    def __init__(self, base):
        self.base = base.rstrip("/")

    def _post(self, path, body):
        return requests.post(self.base + path, headers={"Content-Type": "application/json"}, data=json.dumps(body), timeout=TIMEOUT)

    def upload(self, path, data):
        # SetupController streams a multipart form with file_path and file_data.
        return requests.post(self.base + "/setup/upload", data={"file_path": path},
                             files={"file_data": (os.path.basename(path), data)}, timeout=TIMEOUT)

    def execute(self, command, shell=False):
        return self._post("/setup/execute", {"command": command, "shell": shell})

    def launch(self, command, shell=False):
        if not shell and isinstance(command, str) and len(command.split()) > 1:
            command = command.split()
        return self._post("/setup/launch", {"command": command, "shell": shell})

    def open(self, path):
        return self._post("/setup/open_file", {"path": path})

    def activate_window(self, window_name, strict=False, by_class=False):
        return self._post("/setup/activate_window", {"window_name": window_name, "strict": strict, "by_class": by_class})

    def close_window(self, window_name, strict=False, by_class=False):
        return self._post("/setup/close_window", {"window_name": window_name, "strict": strict, "by_class": by_class})

    def execute_with_verification(self, command, verification, max_wait_time=10, check_interval=1.0, shell=False):
        return self._post("/setup/execute_with_verification", {"command": command, "shell": shell, "verification": verification,
                                                               "max_wait_time": max_wait_time, "check_interval": check_interval})


def keep(node):
    """OSWorld's agents' filter of accessibility nodes (Ubuntu, no images)."""
    tag = node.tag
    widget = (tag.startswith("document") or tag.endswith(("item", "button", "heading", "label", "scrollbar", "searchbox",
                                                            "textbox", "link", "tabelement", "textfield", "textarea", "menu"))
              or tag in {"alert", "canvas", "check-box", "combo-box", "entry", "icon", "image", "paragraph", "scroll-bar",
                         "section", "slider", "static", "table-cell", "terminal", "text", "netuiribbontab", "start",
                         "trayclockwclass", "traydummysearchcontrol", "uiimage", "uiproperty", "uiribboncommandbar"})
    state = lambda s: node.get("{%s}%s" % (STATE_NS, s), "false") == "true"
    if not (widget and state("showing") and state("visible")
            and (state("enabled") or state("editable") or state("expandable") or state("checkable"))
            and (node.get("name", "") != "" or (node.text is not None and len(node.text) > 0))):
        return False

    def pair(attr):
        try:
            a, b = node.get("{%s}%s" % (COMPONENT_NS, attr), "(-1, -1)").strip("()").split(",")
            return int(a), int(b)
        except ValueError:
            return -1, -1
    (x, y), (w, h) = pair("screencoord"), pair("size")
    return x >= 0 and y >= 0 and w > 0 and h > 0


def quote(text):
    return text if '"' not in text else '"' + text.replace('"', '""') + '"'


def linearize(at):
    """The table OSWorld's agents give models."""
    lines = ["tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"]
    for node in ET.fromstring(at).iter():
        if not keep(node):
            continue
        if node.text:
            text = quote(node.text)
        elif node.get("{%s}class" % CLASS_NS, "").endswith("EditWrapper") and node.get("{%s}value" % VALUE_NS):
            text = quote(node.get("{%s}value" % VALUE_NS))
        else:
            text = '""'
        lines.append("\t".join([node.tag, node.get("name", ""), text, node.get("{%s}class" % ATTRIBUTES_NS, ""),
                                node.get("{%s}description" % ATTRIBUTES_NS, ""), node.get("{%s}screencoord" % COMPONENT_NS, ""),
                                node.get("{%s}size" % COMPONENT_NS, "")]))
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: controller.py URL")
    random.seed(19)
    ctl, setup = Controller(sys.argv[1]), Setup(sys.argv[1])
    checks = []

    def check(name, ok, detail=""):
        checks.append({"name": name, "ok": bool(ok), "detail": str(detail)[:300]})

    def succeeded(name, reply):
        check(name, reply is not None and reply.get("status") == "success" and reply.get("returncode") == 0, reply)

    png = ctl.get_screenshot()
    check("get_screenshot", png is not None and png[:8] == b"\x89PNG\r\n\x1a\n", len(png or b""))
    if png:
        width, height = struct.unpack(">II", png[16:24])
        check("screenshot size", (width, height) == (ctl.get_vm_screen_size()["width"], ctl.get_vm_screen_size()["height"]), (width, height))
    at = ctl.get_accessibility_tree()
    root = ET.fromstring(at)
    check("get_accessibility_tree parses with ET.fromstring", root.tag == "desktop-frame", root.tag)
    linearized = linearize(at)
    check("linearize", len(linearized.splitlines()) > 5, linearized.splitlines()[:3])
    check("get_vm_platform", ctl.get_vm_platform() == "Linux")
    check("get_vm_machine", ctl.get_vm_machine() == "x86_64")
    check("get_vm_desktop_path", ctl.get_vm_desktop_path() == "/home/user/Desktop")
    check("get_terminal_output", ctl.get_terminal_output() is None)

    r = setup.upload("/home/user/Desktop/notes.txt", b"hello\n")
    check("setup upload", r.status_code == 200, r.text)
    r = setup.execute(["mkdir", "-p", "/home/user/Desktop/a"])
    check("setup execute (list)", r.status_code == 200 and r.json()["returncode"] == 0, r.text)
    r = setup.execute("echo ok > ~/Desktop/a/b.txt && ls ~/Desktop/a", shell=True)
    check("setup execute (shell)", r.status_code == 200 and r.json()["output"] == "b.txt\n", r.text)
    r = setup.execute(["curl", "http://example.com"])
    check("unknown program answers 500", r.status_code == 500 and r.json()["status"] == "error", r.text)
    r = setup.launch("gedit /home/user/Desktop/notes.txt")
    check("setup launch", r.status_code == 200, r.text)
    r = setup.activate_window("notes.txt - Text Editor", strict=True)
    check("setup activate_window", r.status_code == 200, r.text)
    r = setup.execute_with_verification(["true"], {"window_exists": "Text Editor"})
    check("execute_with_verification", r.status_code == 200 and r.json()["verification"] == "passed", r.text)
    r = setup.execute_with_verification(["true"], {"window_exists": "Google Chrome"}, max_wait_time=1)
    check("execute_with_verification fails", r.status_code == 500 and r.json()["status"] == "verification_failed", r.text)
    r = setup.open("/home/user/Desktop/a/b.txt")
    check("setup open", r.status_code == 200, r.text)
    r = setup.close_window("b.txt - Text Editor")
    check("setup close_window", r.status_code == 200, r.text)
    check("get_file", ctl.get_file("/home/user/Desktop/a/b.txt") == b"ok\n")
    check("get_file missing", ctl.get_file("/home/user/Desktop/none.txt") is None)
    tree = ctl.get_vm_directory_tree("/home/user/Desktop")
    check("get_vm_directory_tree", tree is not None and "a" in [c["name"] for c in tree["children"]], tree)

    actions = [
        {"action_type": "MOVE_TO", "parameters": {"x": 640, "y": 400}},
        {"action_type": "MOVE_TO", "parameters": {}},
        {"action_type": "CLICK", "parameters": {}},
        {"action_type": "CLICK", "parameters": {"button": "left", "x": 60, "y": 16, "num_clicks": 1}},
        {"action_type": "CLICK", "parameters": {"button": "left", "num_clicks": 2}},
        {"action_type": "CLICK", "parameters": {"x": 700, "y": 500}},
        {"action_type": "MOUSE_DOWN", "parameters": {"button": "left"}},
        {"action_type": "MOVE_TO", "parameters": {"x": 720, "y": 520}},
        {"action_type": "MOUSE_UP", "parameters": {"button": "left"}},
        {"action_type": "MOUSE_DOWN", "parameters": {}},
        {"action_type": "MOUSE_UP", "parameters": {}},
        {"action_type": "RIGHT_CLICK", "parameters": {"x": 700, "y": 500}},
        {"action_type": "PRESS", "parameters": {"key": "esc"}},
        {"action_type": "RIGHT_CLICK", "parameters": {}},
        {"action_type": "PRESS", "parameters": {"key": "esc"}},
        {"action_type": "DOUBLE_CLICK", "parameters": {"x": 700, "y": 500}},
        {"action_type": "DOUBLE_CLICK", "parameters": {}},
        {"action_type": "DRAG_TO", "parameters": {"x": 710, "y": 510}},
        {"action_type": "SCROLL", "parameters": {"dx": -2, "dy": -3}},
        {"action_type": "TYPING", "parameters": {"text": "it's \"quoted\"\n"}},
        {"action_type": "KEY_DOWN", "parameters": {"key": "ctrl"}},
        {"action_type": "PRESS", "parameters": {"key": "a"}},
        {"action_type": "KEY_UP", "parameters": {"key": "ctrl"}},
        {"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "c"]}},
    ]
    for a in actions:
        succeeded("execute_action " + a["action_type"] + " " + json.dumps(a["parameters"]), ctl.execute_action(a))
    for a in ("WAIT", "FAIL", "DONE"):
        check("execute_action " + a, ctl.execute_action(a) is None)

    ok = all(c["ok"] for c in checks)
    json.dump({"ok": ok, "checks": checks, "at": at, "linearized": linearized}, sys.stdout)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

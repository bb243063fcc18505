package rollout

import (
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// TestUnrunnableTasksFailEarly: imported OSWorld tasks the simulator
// cannot run are found before any episode, each named with its blockers
// and where it can run.
func TestUnrunnableTasksFailEarly(t *testing.T) {
	pool := simdesk.Pool()
	calc := schemas.Task{TaskID: "calc-1", Domain: "libreoffice_calc", App: "libreoffice_calc", Source: schemas.SourceImported,
		Setup: `[{"type":"download","parameters":{"files":[{"url":"https://x/S.xlsx","path":"/home/user/S.xlsx"}]}},{"type":"open","parameters":{"path":"/home/user/S.xlsx"}}]`,
		Judge: `{"func":"compare_table","result":{"type":"vm_file","path":"/home/user/S.xlsx","dest":"S.xlsx"},"expected":{"type":"cloud_file","path":"https://x/g.xlsx","dest":"g.xlsx"},` +
			`"postconfig":[{"type":"activate_window","parameters":{"window_name":"S.xlsx - LibreOffice Calc","strict":true}}]}`}
	osTask := schemas.Task{TaskID: "os-1", Domain: "os", App: "os", Source: schemas.SourceImported,
		Setup: `[{"type":"execute","parameters":{"command":["gsettings","set","org.gnome.desktop.session","idle-delay","300"]}}]`,
		Judge: `{"func":"exact_match","result":{"type":"vm_command_line","command":["gsettings","get","org.gnome.desktop.session","idle-delay"]},"expected":{"type":"rule","rules":{"expected":"uint32 0\n"}}}`}
	tasks := []schemas.Task{pool[0], calc, osTask, pool[1]}
	blocked := Unrunnable(tasks, EnvSim)
	if len(blocked) != 2 || blocked[0].TaskID != "calc-1" || blocked[1].TaskID != "os-1" {
		t.Fatalf("blocked %+v", blocked)
	}
	msg := UnrunnableError(blocked, len(tasks), EnvSim).Error()
	for _, want := range []string{"2 of 4 tasks cannot run on the simulator", "calc-1 (libreoffice_calc): setup: download; setup: open .xlsx; judge: getter cloud_file",
		"os-1 (os): setup: execute gsettings", "runs on an OSWorld VM: --env osworld --osworld-url URL", "import osworld-results", "--skip-unsupported"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	// On a VM the os task runs; the calc one needs a judge cualake lacks.
	if vm := Unrunnable(tasks, EnvOSWorld); len(vm) != 1 || vm[0].TaskID != "calc-1" {
		t.Fatalf("on a VM: %+v", vm)
	}
}

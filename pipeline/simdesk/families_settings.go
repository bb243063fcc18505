package simdesk

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

// settingCrit judges one setting by its kind.
func settingCrit(key, value string) judge.Criterion {
	g := &judge.Getter{Type: "setting", Key: key}
	def := settingByKey(key)
	switch def.Kind {
	case KindToggle:
		if value == "true" {
			return crit("is_true", g, nil)
		}
		return crit("is_false", g, nil)
	case KindSlider:
		n, _ := strconv.ParseFloat(value, 64)
		return critOpt("compare_number", g, rule(n), judge.Options{Tolerance: 1})
	}
	return crit("exact_match", g, rule(value))
}

// settingsOfKind lists catalogue settings of a kind, in catalogue order.
func settingsOfKind(kind string) []*SettingDef {
	var out []*SettingDef
	for _, p := range Pages {
		for _, s := range p.Settings {
			if s.Kind == kind {
				out = append(out, s)
			}
		}
	}
	return out
}

func pageTitle(key string) string { return pageOf(key).Title }

func settingsFamilies() []family {
	toggles := settingsOfKind(KindToggle)
	choices := settingsOfKind(KindChoice)
	sliders := settingsOfKind(KindSlider)
	return []family{
		{id: "settings-toggle", app: "settings", abilities: []string{"navigate_pages", "scroll", "toggle"}, n: 16, gen: func(i int) taskSpec {
			// Spread over the catalogue so pages that need scrolling are covered.
			def := toggles[(i*7)%len(toggles)]
			want := "false"
			if def.Default == "false" {
				want = "true"
			}
			verb := map[string]string{"true": "Turn on", "false": "Turn off"}[want]
			return taskSpec{param: def.Key,
				instruction: fmt.Sprintf("%s %q in the %s settings.", verb, def.Label, pageTitle(def.Key)),
				criteria:    []judge.Criterion{settingCrit(def.Key, want)}}
		}},
		{id: "settings-choice", app: "settings", abilities: []string{"navigate_pages", "dropdown"}, n: 12, gen: func(i int) taskSpec {
			def := choices[i%len(choices)]
			opt := def.Options[(i/len(choices)+1+indexOf(def.Options, def.Default))%len(def.Options)]
			if opt == def.Default {
				opt = def.Options[(indexOf(def.Options, def.Default)+1)%len(def.Options)]
			}
			return taskSpec{param: def.Key + "=" + opt,
				instruction: fmt.Sprintf("In Settings > %s, set %q to %s.", pageTitle(def.Key), def.Label, opt),
				criteria:    []judge.Criterion{settingCrit(def.Key, opt)}}
		}},
		{id: "settings-text", app: "settings", abilities: []string{"navigate_pages", "text_field"}, n: 8, gen: func(i int) taskSpec {
			cases := []struct{ key, value string }{
				{"general.device_name", "office-pc-" + strconv.Itoa(i+1)}, {"network.dns", fmt.Sprintf("9.9.%d.%d", i, i+1)},
				{"network.proxy_host", fmt.Sprintf("proxy%d.example.com", i+1)}, {"network.proxy_port", strconv.Itoa(3128 + i)},
			}
			c := cases[i%len(cases)]
			def := settingByKey(c.key)
			return taskSpec{param: c.key + "=" + c.value,
				instruction: fmt.Sprintf("Set %q in the %s settings to %s.", def.Label, pageTitle(c.key), c.value),
				criteria:    []judge.Criterion{settingCrit(c.key, c.value)}}
		}},
		{id: "settings-slider", app: "settings", abilities: []string{"navigate_pages", "slider"}, n: 8, gen: func(i int) taskSpec {
			def := sliders[i%len(sliders)]
			n := 15 + (i*23)%80
			if def0, _ := strconv.Atoi(def.Default); abs(n-def0) <= 2 {
				n += 10 // the untouched value must not already pass
			}
			v := strconv.Itoa(n)
			return taskSpec{param: def.Key + "=" + v,
				instruction: fmt.Sprintf("Set %q (%s settings) to %s%%.", def.Label, pageTitle(def.Key), v),
				criteria:    []judge.Criterion{settingCrit(def.Key, v)}}
		}},
		{id: "settings-multi", app: "settings", abilities: []string{"navigate_pages", "scroll", "toggle", "dropdown", "text_field", "multi_step"}, n: 8, gen: func(i int) taskSpec {
			profiles := [][][2]string{
				{{"network.proxy_mode", "Manual"}, {"network.proxy_host", "proxy.corp.example"}, {"network.proxy_port", "8080"}},
				{{"display.dark_mode", "true"}, {"display.brightness", "60"}, {"display.font_size", "Large"}},
				{{"privacy.location", "true"}, {"privacy.usage_stats", "false"}, {"privacy.app_tracking", "true"}, {"privacy.lock_after", "15 minutes"}},
				{{"accessibility.large_text", "true"}, {"accessibility.high_contrast", "true"}, {"accessibility.cursor_size", "Larger"}, {"accessibility.zoom", "40"}},
				{{"general.language", "Deutsch"}, {"general.timezone", "Europe/Berlin"}, {"general.date_format", "DD/MM/YYYY"}, {"general.24h_clock", "true"}},
				{{"sound.mute", "true"}, {"sound.output", "Headphones"}, {"sound.alert", "None"}, {"network.airplane_mode", "true"}},
				{{"network.wifi", "false"}, {"network.dns", "8.8.8.8"}, {"privacy.firewall", "false"}, {"privacy.diagnostics", "Off"}, {"display.night_light", "true"}},
				{{"general.device_name", "lab-42"}, {"display.resolution", "1920x1080"}, {"display.scale", "125%"}, {"sound.volume", "30"}, {"accessibility.sticky_keys", "true"}},
			}
			prof := profiles[i%len(profiles)]
			var parts []string
			var crits []judge.Criterion
			for _, kv := range prof {
				def := settingByKey(kv[0])
				v := kv[1]
				switch v {
				case "true":
					v = "on"
				case "false":
					v = "off"
				}
				parts = append(parts, fmt.Sprintf("%s %s to %s", pageTitle(kv[0]), strings.ToLower(def.Label), v))
				crits = append(crits, settingCrit(kv[0], kv[1]))
			}
			return taskSpec{param: prof[0][0] + strconv.Itoa(i),
				instruction: "Change these settings: " + strings.Join(parts, "; ") + ".",
				criteria:    crits}
		}},
		{id: "settings-infeasible", app: "settings", abilities: []string{"infeasible"}, n: 6, gen: func(i int) taskSpec {
			asks := []string{"Turn on Bluetooth in Settings.", "Set the keyboard layout to Dvorak.", "Enable the fingerprint reader for login.",
				"Change the desktop wallpaper to a photo of mountains.", "Set the screen refresh rate to 144 Hz.", "Turn on the VPN named Office."}
			return taskSpec{param: asks[i], instruction: asks[i], infeasible: true}
		}},
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return 0
}

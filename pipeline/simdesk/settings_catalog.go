package simdesk

import (
	"slices"
	"strconv"
	"strings"
)

// Setting kinds.
const (
	KindToggle = "toggle"
	KindChoice = "choice"
	KindText   = "text"
	KindSlider = "slider"
)

// SettingDef describes one setting of the settings panel.
type SettingDef struct {
	Key     string   // "display.dark_mode"
	Label   string   // what the panel shows
	Kind    string   // toggle, choice, text, slider
	Options []string // choices
	Default string
	Numeric bool // a text setting that must hold a whole number
}

// SettingsPage is one page of the settings panel.
type SettingsPage struct {
	ID, Title string
	Settings  []*SettingDef
}

func toggle(key, label string, on bool) *SettingDef {
	return &SettingDef{Key: key, Label: label, Kind: KindToggle, Default: strconv.FormatBool(on)}
}

func choice(key, label, def string, opts ...string) *SettingDef {
	return &SettingDef{Key: key, Label: label, Kind: KindChoice, Options: opts, Default: def}
}

func textSetting(key, label, def string, numeric bool) *SettingDef {
	return &SettingDef{Key: key, Label: label, Kind: KindText, Default: def, Numeric: numeric}
}

func slider(key, label string, def int) *SettingDef {
	return &SettingDef{Key: key, Label: label, Kind: KindSlider, Default: strconv.Itoa(def)}
}

// Pages is the settings catalogue, in panel order.
var Pages = []*SettingsPage{
	{ID: "general", Title: "General", Settings: []*SettingDef{
		textSetting("general.device_name", "Device name", "simdesk", false),
		choice("general.language", "Language", "English", "English", "Deutsch", "Francais", "Espanol", "Italiano", "Portugues"),
		choice("general.timezone", "Time zone", "UTC", "UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"),
		choice("general.date_format", "Date format", "YYYY-MM-DD", "YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY"),
		toggle("general.auto_updates", "Automatic updates", true),
		toggle("general.24h_clock", "24-hour clock", true),
	}},
	{ID: "display", Title: "Display", Settings: []*SettingDef{
		toggle("display.dark_mode", "Dark mode", false),
		slider("display.brightness", "Brightness", 80),
		choice("display.resolution", "Resolution", "1280x800", "1280x800", "1920x1080", "2560x1440"),
		choice("display.scale", "Scale", "100%", "100%", "125%", "150%", "200%"),
		toggle("display.night_light", "Night light", false),
		choice("display.font_size", "Font size", "Medium", "Small", "Medium", "Large"),
	}},
	{ID: "sound", Title: "Sound", Settings: []*SettingDef{
		slider("sound.volume", "Output volume", 50),
		toggle("sound.mute", "Mute", false),
		choice("sound.output", "Output device", "Speakers", "Speakers", "Headphones", "HDMI"),
		choice("sound.alert", "Alert sound", "Chime", "Chime", "Bell", "Click", "None"),
		slider("sound.input_volume", "Input volume", 60),
	}},
	{ID: "network", Title: "Network", Settings: []*SettingDef{
		toggle("network.wifi", "Wi-Fi", true),
		toggle("network.airplane_mode", "Airplane mode", false),
		choice("network.proxy_mode", "Proxy", "None", "None", "Manual", "Automatic"),
		textSetting("network.proxy_host", "Proxy host", "", false),
		textSetting("network.proxy_port", "Proxy port", "", true),
		textSetting("network.dns", "DNS server", "1.1.1.1", false),
	}},
	{ID: "privacy", Title: "Privacy", Settings: []*SettingDef{
		toggle("privacy.location", "Location services", false),
		toggle("privacy.camera", "Camera access", true),
		toggle("privacy.microphone", "Microphone access", true),
		toggle("privacy.usage_stats", "Share usage statistics", true),
		toggle("privacy.crash_reports", "Send crash reports", true),
		toggle("privacy.screen_lock", "Screen lock", true),
		choice("privacy.lock_after", "Lock after", "5 minutes", "1 minute", "5 minutes", "15 minutes", "30 minutes", "Never"),
		toggle("privacy.recent_files", "Remember recent files", true),
		choice("privacy.empty_trash", "Empty trash", "Never", "Never", "After 7 days", "After 30 days"),
		choice("privacy.diagnostics", "Diagnostics", "Basic", "Off", "Basic", "Full"),
		toggle("privacy.personalized_ads", "Personalized ads", false),
		toggle("privacy.app_tracking", "App tracking", false),
		toggle("privacy.firewall", "Firewall", true),
	}},
	{ID: "accessibility", Title: "Accessibility", Settings: []*SettingDef{
		toggle("accessibility.large_text", "Large text", false),
		toggle("accessibility.high_contrast", "High contrast", false),
		toggle("accessibility.screen_reader", "Screen reader", false),
		toggle("accessibility.sticky_keys", "Sticky keys", false),
		toggle("accessibility.slow_keys", "Slow keys", false),
		toggle("accessibility.bounce_keys", "Bounce keys", false),
		toggle("accessibility.visual_alerts", "Visual alerts", false),
		toggle("accessibility.onscreen_keyboard", "On-screen keyboard", false),
		toggle("accessibility.reduce_animation", "Reduce animation", false),
		choice("accessibility.cursor_size", "Cursor size", "Default", "Default", "Large", "Larger", "Largest"),
		toggle("accessibility.cursor_blink", "Blinking text cursor", true),
		slider("accessibility.zoom", "Zoom level", 0),
	}},
}

// SettingByKey returns a setting's definition, or nil.
func SettingByKey(key string) *SettingDef { return settingByKey(key) }

func settingByKey(key string) *SettingDef {
	for _, p := range Pages {
		for _, s := range p.Settings {
			if s.Key == key {
				return s
			}
		}
	}
	return nil
}

func settingsPage(id string) *SettingsPage {
	for _, p := range Pages {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// pageOf returns the page holding a setting.
func pageOf(key string) *SettingsPage {
	return settingsPage(strings.SplitN(key, ".", 2)[0])
}

func defaultSettings() SettingsState {
	var st SettingsState
	for _, p := range Pages {
		for _, s := range p.Settings {
			st.Values = append(st.Values, SettingValue{Key: s.Key, Value: s.Default})
		}
	}
	slices.SortFunc(st.Values, func(a, b SettingValue) int { return strings.Compare(a.Key, b.Key) })
	st.Page = "general"
	return st
}

// settingRaw returns a setting's stored text.
func (s *State) settingRaw(key string) (string, bool) {
	i, ok := slices.BinarySearchFunc(s.Settings.Values, key, func(v SettingValue, k string) int { return strings.Compare(v.Key, k) })
	if !ok {
		return "", false
	}
	return s.Settings.Values[i].Value, true
}

// SettingValue returns a setting typed by its kind: bool for toggles,
// float64 for sliders, string otherwise.
func (s *State) SettingValue(key string) (any, bool) {
	def := settingByKey(key)
	raw, ok := s.settingRaw(key)
	if def == nil || !ok {
		return nil, false
	}
	switch def.Kind {
	case KindToggle:
		return raw == "true", true
	case KindSlider:
		n, _ := strconv.Atoi(raw)
		return float64(n), true
	}
	return raw, true
}

// checkSetting validates a value for a setting and returns its stored form.
func checkSetting(def *SettingDef, v string) (string, string) {
	switch def.Kind {
	case KindToggle:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "on", "1", "yes":
			return "true", ""
		case "false", "off", "0", "no":
			return "false", ""
		}
		return "", def.Label + " must be on or off"
	case KindChoice:
		for _, o := range def.Options {
			if strings.EqualFold(o, strings.TrimSpace(v)) {
				return o, ""
			}
		}
		return "", def.Label + " must be one of " + strings.Join(def.Options, ", ")
	case KindSlider:
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || n < 0 || n > 100 {
			return "", def.Label + " must be a number from 0 to 100"
		}
		return strconv.Itoa(int(n + 0.5)), ""
	}
	v = strings.TrimSpace(v)
	if def.Numeric && v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
			return "", def.Label + " must be a whole number from 0 to 65535"
		}
	}
	if len(v) > 200 {
		return "", def.Label + " is too long"
	}
	return v, ""
}

// setSetting stores a checked value; it returns a message when the value is
// not valid for the setting.
func (s *State) setSetting(key, v string) string {
	def := settingByKey(key)
	if def == nil {
		return "no setting " + key
	}
	stored, msg := checkSetting(def, v)
	if msg != "" {
		return msg
	}
	i, ok := slices.BinarySearchFunc(s.Settings.Values, key, func(v SettingValue, k string) int { return strings.Compare(v.Key, k) })
	if ok {
		s.Settings.Values[i].Value = stored
	}
	return ""
}

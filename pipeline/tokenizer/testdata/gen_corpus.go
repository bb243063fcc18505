//go:build ignore

// gen_corpus writes the tokenizer cross-check corpus as JSON lines
// {"text": ...} to stdout. It is deterministic (its own PRNG, no map
// iteration), so regenerating the fixture gives the same bytes:
//
//	go run testdata/gen_corpus.go | node testdata/reference.js > testdata/reference.jsonl
//
// (run from pipeline/tokenizer; see the go:generate lines in tokenizer.go).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// rng is splitmix64: tiny, and its sequence never changes with Go releases.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

// fill replaces the %s verbs of format with args in order; spare args are
// dropped, so formats may use fewer than given.
func fill(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}

var (
	apps     = []string{"Firefox", "Chrome", "Terminal", "VS Code", "LibreOffice Calc", "Thunderbird", "GIMP", "Files", "Settings", "Slack", "Excel", "Word", "Notepad++", "Spotify", "Zoom", "the browser"}
	elements = []string{"the Save button", "the search bar", "the 'File' menu", "the third row", "the checkbox labelled \"Remember me\"", "the OK button", "the address bar", "the close icon (×)", "the drop-down list", "the Submit button", "the first tab", "cell B7", "the toggle for Wi‑Fi", "the link \"Sign in\"", "the trash icon", "the scrollbar"}
	verbs    = []string{"Click", "Double-click", "Right-click", "Open", "Select", "Scroll down to", "Drag", "Hover over", "Type into", "Close", "Find", "Press"}
	tasks    = []string{
		"Open %s and navigate to github.com/cualake/cualake.",
		"%s: rename the file report_final(2).docx to report.docx.",
		"In %s, set the font size of the title to 14pt and make it bold.",
		"Use %s to download the invoice dated 2024-03-15 and save it to ~/Downloads/invoices/.",
		"Can you change %s's theme to dark mode? It's too bright.",
		"I'd like you to sort column C in %s in descending order.",
		"Please don't close %s; just minimise it.",
		"%s isn't responding — force quit it and reopen the last session.",
		"Search for \"best pizza near me\" in %s and open the 3rd result.",
		"Fill in the form in %s: name=Zoë Ångström, email=zoe@example.com, phone=+49 30 1234567.",
		"Export the chart in %s as PNG (1920×1080) and attach it to the e-mail.",
		"We'll need %s to show hidden files; they're under View → Show Hidden Files.",
		"在%s中打开设置，然后把语言改成简体中文。",
		"%sで新しいタブを開いて、天気予報を検索してください。",
		"%s에서 파일 메뉴를 열고 \"다른 이름으로 저장\"을 선택하세요.",
		"Ouvrez %s et cliquez sur « Enregistrer sous… ».",
		"Öffne %s und lösche alle Einträge älter als 30 Tage.",
		"افتح %s ثم اضغط على زر الحفظ.",
		"פתח את %s ולחץ על כפתור השמירה.",
		"Откройте %s и нажмите «Сохранить».",
	}
	thoughts = []string{
		"The user wants me to %s. I can see %s at the top of the screen.",
		"I need to find %s first. It's probably in the toolbar; let me look more carefully.",
		"The previous click didn't work — the dialog is still open. I'll try %s instead.",
		"Looking at the screenshot, %s is at roughly (512, 300). I'll click it.",
		"Hmm, the page hasn't loaded yet. I should wait 2 seconds and then %s.",
		"OK, so the form has 3 fields: name, e-mail and phone. I'll %s.",
		"Wait, that's the wrong window.\n\nLet me switch back with alt+tab and %s.",
		"首先我需要找到%s，然后%s。",
	}
	keys = []string{"enter", "tab", "esc", "backspace", "ctrl", "shift", "alt", "cmd", "f5", "pagedown", "delete", "space", "up", "left"}
	code = []string{
		"def click(x, y):\n    pyautogui.moveTo(x, y, duration=0.25)\n    pyautogui.click()\n",
		"for i in range(10):\n\tprint(f\"step {i}: {obs['screen'][i]!r}\")\n",
		"if __name__ == '__main__':\n    main()\n",
		"func main() {\n\tfmt.Println(\"hello, 世界\")\n}\n",
		"const xs = [1, 2, 3].map((x) => x ** 2); // [1, 4, 9]\n",
		"SELECT id, name FROM users WHERE created_at >= '2024-01-01' ORDER BY id DESC LIMIT 10;",
		"#!/bin/bash\nset -euo pipefail\nfor f in *.png; do convert \"$f\" -resize 50% \"small_$f\"; done\n",
		"<div class=\"btn btn-primary\" id='save'>Save</div>\n<script>document.getElementById('save').click();</script>",
		"{\n  \"action\": \"type\",\n  \"text\": \"Hello\\nWorld\",\n  \"coordinate\": [100, 200]\n}",
		"x = {'a': 1, \"b\": [2, 3], 'c': None}  # dict\nassert x['a'] == 1, \"bad\"\n",
		"#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }\n",
		"    return self.env.step(action)\n\n\n\nclass Agent:\n    pass\n",
		"```python\nimport pyautogui\npyautogui.hotkey('ctrl', 'shift', 't')\n```",
		"$ ls -la ~/Documents | grep -i '\\.pdf$' | wc -l\n      17\n",
		"  if (a && b || !c) { return a->next ?: NULL; }  ",
		"regex = r\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+\"",
		"y = np.array([[1.5, -2e-3], [3.14159, 0xFF]]) @ W.T",
		"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What's on the screen?<|im_end|>\n<|im_start|>assistant\n",
	}
	specials = []string{
		"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>", "<|vision_pad|>",
		"<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
		"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>",
		"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
		// near misses, which must stay plain text
		"<|im_start", "<|im_end|", "|im_end|>", "<|IM_END|>", "<think >", "< think>", "<|image_pad|", "<<|im_end|>>", "<|im_start|><|im_start|>",
	}
	unicodeSamples = []string{
		"你好，世界！今天天气很好。", "日本語のテキスト、カタカナとひらがな。", "한국어 텍스트입니다.", "中文混合English文本123。",
		"Привет, мир! Ёжик в тумане.", "Γειά σου Κόσμε· ἀρχή", "مرحبا بالعالم! ١٢٣٤٥", "שלום עולם! 12", "नमस्ते दुनिया। १२३",
		"สวัสดีชาวโลก", "Xin chào thế giới, tiếng Việt có dấu.", "Zażółć gęślą jaźń", "naïve café résumé façade coöperate",
		"Ångström Øresund Æsir ß ẞ ﬁ ﬂ", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３", "①②③ ⅠⅡⅢⅫ ½ ¾ ² ³ ⁴ ₅", "∀x∈ℝ: x²≥0 ⇒ √x ∈ ℝ⁺∪{0}",
		"😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇩🇪🇯🇵 ❤️ 🫠 ✅", "emoji at end 🎉", "🎉start", "a😀b😀c", "🏳️‍🌈 🏴‍☠️ 👩🏾‍💻",
		"e\u0301 a\u0300 o\u0308 n\u0303 c\u0327", "\u1100\u1161\u11a8 \u1112\u1161\u11ab", "A\u030a \u212b \u2126 K",
		"x\u0302\u0323 q\u0307\u0323 s\u0323\u0307", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
		"\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd", "\u0627\u064e\u0644\u0652\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u064e\u0651\u0629",
		"\u200b zero\u200bwidth \u200c\u200d joiners", "bom\ufeffinside", "nel\u0085line", "ls\u2028ps\u2029end", "nbsp\u00a0here\u00a0\u00a0twice",
		"ideographic\u3000space", "thin\u2009space\u202fnarrow\u205fmath", "ogham\u1680space", "soft\u00adhyphen",
		"new letters: \U00010d81\U00010d82 \U000134d7 \U0001e5e2 \U0002ec2b\U0002ecc1 \U000323d5\U0003246b",
		"\u0f40\u0f72\u0f7e \u1780\u17b6 \u0d15\u0d4d\u0d37", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𝟘𝟙𝟚", "\U0001d7ce\U0001d7cf 𐌰𐌱 𓀀𓁐",
		"mixed: English, 中文, العربية, עברית, русский, 😀, 123",
	}
	fixed = []string{
		"", " ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\n\n\n", " \n", "\n ", " \n ", "\t\n\t", "a", "A", "'", "''", "'''",
		"hello", " hello", "  hello", "hello ", "hello  ", "hello\n", "hello \n", "hello\n\n\nworld", "hello   world", "hello\t\tworld",
		"a  b   c    d", "trailing spaces   ", "   leading spaces", "\n\n\nleading newlines", "trailing newlines\n\n\n",
		"line1\r\nline2\r\n\r\nline3", "tabs\tand\tspaces \t mixed", " \t \n \t ", "x \n y", "x\n \ny", "x  \n  y", "x\u00a0\ny",
		"it's", "It's", "IT'S", "it'S", "we're", "WE'RE", "We'Re", "they've", "THEY'VE", "I'm", "I'M", "you'll", "YOU'LL", "You'Ll",
		"he'd", "HE'D", "don't", "DON'T", "can't", "won't", "o'clock", "rock'n'roll", "'s", "'S", "'re", "'ll", "'d", "'m", "'t", "'ve",
		"' s", "'sorry", "'Tis", "l'homme", "dell'arte", "it’s curly", "it‘s", "''s", "'''re", "x'y'z", "'123", "'\n", "' \n",
		"don't  you've\tthey'll\nwe'd", "The cat's toy's colour's", "JOHN'S BOOK", "O'Neil's", "Ma'am",
		"0", "1", "12", "123", "1234", "12345", "3.14159", "-42", "+1e-10", "1,000,000", "2024-05-17T13:45:00Z", "0x1F", "1/2",
		"(512, 300)", "x=512, y=300", "[0.25, 0.75]", "100%", "$19.99", "€5,00", "¥1000", "#1", "v1.2.3", "192.168.0.1", "+1 (555) 123-4567",
		"!!!", "???", "...", "…", "---", "===", "***", "!?", "?!", ".\n", ",\n\n", ";\r\n", ")\n\n\n", "a.b.c", "a,b;c:d", "(a)[b]{c}", "<>", "</>",
		"@user #tag $var %mod ^caret &amp *star", "~/path/to/file.txt", "C:\\Users\\me\\file.txt", "https://example.com/a?b=1&c=2#frag",
		"a\u0000b", "\u0001\u0002\u0003", "\u007f", "\x1b[31mred\x1b[0m",
	}
)

func main() {
	r := rng(20240517)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	seen := map[string]bool{}
	n := 0
	emit := func(s string) {
		if seen[s] {
			return
		}
		seen[s] = true
		n++
		if err := enc.Encode(map[string]string{"text": s}); err != nil {
			panic(err)
		}
	}

	for _, s := range fixed {
		emit(s)
	}
	for _, s := range specials {
		emit(s)
		emit("x" + s + "y")
		emit(" " + s + " ")
		emit("\n" + s + "\n")
	}
	for _, s := range unicodeSamples {
		emit(s)
		emit(" " + s)
		emit(s + "\n")
	}
	for _, s := range code {
		emit(s)
	}
	// Every ASCII character alone, after a space and between letters.
	for c := 0; c < 128; c++ {
		emit(string(rune(c)))
		emit(" " + string(rune(c)))
		emit("a" + string(rune(c)) + "b")
	}

	// GUI-agent instructions.
	for i := 0; i < 300; i++ {
		s := fill(pick(&r, tasks), pick(&r, apps))
		if r.intn(3) == 0 {
			s = fmt.Sprintf("%s %s, then %s.", pick(&r, verbs), pick(&r, elements), strings.ToLower(s[:1])+s[1:])
		}
		if r.intn(5) == 0 {
			s = strings.ToUpper(s)
		}
		if r.intn(4) == 0 {
			s += strings.Repeat(" ", r.intn(3)+1)
		}
		emit(s)
	}

	// pyautogui and JSON actions.
	for i := 0; i < 400; i++ {
		x, y := r.intn(2560), r.intn(1600)
		var s string
		switch r.intn(10) {
		case 0:
			s = fmt.Sprintf("pyautogui.click(x=%d, y=%d)", x, y)
		case 1:
			s = fmt.Sprintf("pyautogui.doubleClick(%d, %d)\npyautogui.typewrite('%s', interval=0.05)", x, y, pick(&r, []string{"hello world", "it's done", "Zoë", "ls -la\n", "50%", "東京"}))
		case 2:
			s = fmt.Sprintf("pyautogui.hotkey('%s', '%s')", pick(&r, keys), pick(&r, keys))
		case 3:
			s = fmt.Sprintf("pyautogui.scroll(%d)\npyautogui.moveTo(%d, %d, duration=%d.%d)", r.intn(21)-10, x, y, r.intn(3), r.intn(10))
		case 4:
			s = fmt.Sprintf(`{"action": "left_click", "coordinate": [%d, %d]}`, x, y)
		case 5:
			s = fmt.Sprintf("<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {\"action\": \"type\", \"text\": \"%s\"}}\n</tool_call>", pick(&r, []string{"Hello", "it's 5 o'clock", "naïve", "\\n", "C:\\\\tmp"}))
		case 6:
			s = fmt.Sprintf("click(start_box='(%d,%d)')", x*1000/2560, y*1000/1600)
		case 7:
			s = fmt.Sprintf("Action: drag from (%d, %d) to (%d, %d)\nObservation: the window moved by %d px.", x, y, r.intn(2560), r.intn(1600), r.intn(500))
		case 8:
			s = fmt.Sprintf("pyautogui.press('%s'); pyautogui.keyDown('shift'); pyautogui.keyUp('shift')  # %d", pick(&r, keys), i)
		default:
			s = fmt.Sprintf("<|box_start|>(%d,%d),(%d,%d)<|box_end|>", x, y, x+r.intn(200), y+r.intn(80))
		}
		emit(s)
	}

	// Model responses with reasoning.
	for i := 0; i < 300; i++ {
		th := fill(pick(&r, thoughts), strings.ToLower(pick(&r, verbs))+" "+pick(&r, elements), pick(&r, elements))
		act := fmt.Sprintf("pyautogui.click(x=%d, y=%d)", r.intn(1920), r.intn(1080))
		var s string
		switch r.intn(4) {
		case 0:
			s = "<think>\n" + th + "\n</think>\n\n" + act
		case 1:
			s = "<think>" + th + "</think>" + act
		case 2:
			s = "Thought: " + th + "\nAction: " + act + "\n"
		default:
			s = "<think>\n\n" + th + "\n\n\n</think>\n\n<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {\"action\": \"left_click\", \"coordinate\": [" + fmt.Sprint(r.intn(1920)) + ", " + fmt.Sprint(r.intn(1080)) + "]}}\n</tool_call>"
		}
		emit(s)
	}

	// Numbers.
	for i := 0; i < 150; i++ {
		var s string
		switch r.intn(6) {
		case 0:
			s = fmt.Sprint(r.next() >> uint(r.intn(64)))
		case 1:
			s = fmt.Sprintf("%d.%0*d", r.intn(100000), r.intn(8)+1, r.intn(100000000))
		case 2:
			s = fmt.Sprintf("%d-%02d-%02d %02d:%02d:%02d", 1990+r.intn(40), 1+r.intn(12), 1+r.intn(28), r.intn(24), r.intn(60), r.intn(60))
		case 3:
			s = fmt.Sprintf("step %d/%d, reward=%.4f, loss=%.3e", r.intn(1000), 1000, float64(r.intn(10000))/10000, float64(r.intn(1000))*1e-5)
		case 4:
			s = fmt.Sprintf("%x", r.next())
		default:
			s = fmt.Sprintf("(%d,%d) (%d, %d)", r.intn(2000), r.intn(2000), r.intn(2000), r.intn(2000))
		}
		emit(s)
	}

	// Random soup from character pools, to hit the regex alternatives in
	// every combination.
	pools := [][]string{
		strings.Split("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", ""),
		strings.Split("0123456789", ""),
		{" ", " ", " ", "  ", "\t", "\n", "\n", "\r\n", "\r", "\n\n", " \n", "\u00a0", "\u3000", "\u2028", "\ufeff", "\u0085", "\u200b", "\u2003", "\v", "\f"},
		strings.Split("'''\".,;:!?()[]{}<>-_=+*/\\|@#$%^&~`", ""),
		{"é", "ü", "ñ", "ø", "ß", "e\u0301", "o\u0308", "\u0301", "\u0308", "\u0323", "\u0302", "\u0345", "\u05b8", "\u064e", "\u0e31", "\u093f", "\u0344", "\u0f73", "\u1161", "\u11a8"},
		{"中", "文", "日", "本", "語", "한", "국", "\u1100", "あ", "カ", "ー", "。", "，", "「", "」", "、", "！", "（", "）", "ｔ", "１"},
		{"😀", "👍", "🏽", "\u200d", "👩", "💻", "🇩", "🇪", "❤", "\ufe0f", "✅", "🎉", "©", "®", "™", "°", "±", "×", "÷", "€", "£", "¥"},
		{"ا", "ل", "ع", "ش", "ב", "ש", "ל", "Ж", "щ", "Ω", "λ", "ก", "त", "्", "ম", "\u0d15", "\U00010d81", "\U000134d7", "\U0002ec2b", "\U000323d5"},
		{"²", "½", "Ⅻ", "①", "٣", "७", "𝟙", "፲", "〇", "㊀"},
		{"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|image_pad|>", "<tool_call>", "<|", "|>", "<", ">", "|"},
		{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'mM", "'L", "'LL"},
	}
	weights := []int{30, 8, 20, 12, 6, 6, 5, 5, 2, 2, 4}
	total := 0
	for _, w := range weights {
		total += w
	}
	for i := 0; i < 700; i++ {
		var b strings.Builder
		l := 1 + r.intn(40)
		if r.intn(10) == 0 {
			l += r.intn(200)
		}
		for j := 0; j < l; j++ {
			k, x := 0, r.intn(total)
			for x >= weights[k] {
				x -= weights[k]
				k++
			}
			b.WriteString(pick(&r, pools[k]))
		}
		emit(b.String())
	}

	// Long strings: the large-word merge path, long whitespace runs, and
	// combining marks beyond the stream-safe limit of 30.
	emit(strings.Repeat("a", 3000))
	emit(strings.Repeat("ab", 1000))
	emit(strings.Repeat("abc", 300) + " " + strings.Repeat("xyz", 300))
	emit(strings.Repeat(" ", 2000) + "x")
	emit(strings.Repeat(" ", 500))
	emit(strings.Repeat("\n", 300) + "end")
	emit(strings.Repeat(" \n", 200))
	emit(strings.Repeat("=", 1000))
	emit(strings.Repeat("-=", 400) + "\n\n")
	emit(strings.Repeat("9", 500))
	emit(strings.Repeat("中文", 300))
	emit(strings.Repeat("😀", 200))
	emit(strings.Repeat("ﷺ", 100))
	emit("a" + strings.Repeat("\u0301\u0316", 20) + "b")
	emit("Z" + strings.Repeat("\u0300\u0301\u0302\u0316\u0317", 12) + "al" + strings.Repeat("\u0327", 40) + "go")
	emit("e" + strings.Repeat("\u0301", 35) + " " + strings.Repeat("\u0323", 31) + "x")
	var long strings.Builder
	for i := 0; i < 60; i++ {
		long.WriteString(fill(pick(&r, tasks), pick(&r, apps)))
		long.WriteString(pick(&r, []string{" ", "\n", "\n\n", "  ", "\t"}))
	}
	emit(long.String())

	// Chat transcripts as the template renders them.
	for i := 0; i < 80; i++ {
		var b strings.Builder
		b.WriteString("<|im_start|>system\nYou are a GUI agent. You are given a task and a screenshot.<|im_end|>\n")
		for turn := 0; turn < 1+r.intn(3); turn++ {
			b.WriteString("<|im_start|>user\n<|vision_start|>")
			b.WriteString(strings.Repeat("<|image_pad|>", 1+r.intn(6)))
			b.WriteString("<|vision_end|>")
			b.WriteString(fill(pick(&r, tasks), pick(&r, apps)))
			b.WriteString("<|im_end|>\n<|im_start|>assistant\n")
			b.WriteString(fmt.Sprintf("<think>\n%s\n</think>\n\npyautogui.click(x=%d, y=%d)", fill(pick(&r, thoughts), pick(&r, elements), pick(&r, elements)), r.intn(1280), r.intn(800)))
			b.WriteString("<|im_end|>\n")
		}
		emit(b.String())
	}
	fmt.Fprintf(os.Stderr, "gen_corpus: %d strings\n", n)
}

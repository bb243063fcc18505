package simdesk

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestTreeXML(t *testing.T) {
	d := newDesk(t, 1)
	if err := d.ApplySetup(BuildSetup(Step("create_file", map[string]string{"path": "~/t.csv", "content": "a,\"b & <c>\"\n"}),
		Step("open_file", map[string]string{"path": "~/t.csv"}))); err != nil {
		t.Fatal(err)
	}
	x := d.TreeXML()
	// Well-formed, with OSWorld's root, prefixes and URIs.
	var root struct {
		XMLName xml.Name
		Attrs   []xml.Attr `xml:",any,attr"`
		Apps    []struct {
			Name   string `xml:"name,attr"`
			Frames []struct {
				XMLName xml.Name
				Name    string `xml:"name,attr"`
			} `xml:",any"`
		} `xml:"application"`
	}
	if err := xml.Unmarshal(x, &root); err != nil {
		t.Fatalf("not well-formed: %v\n%.300s", err, x)
	}
	if root.XMLName.Local != "desktop-frame" {
		t.Fatalf("root %v", root.XMLName)
	}
	for _, want := range []string{`xmlns:st="https://accessibility.ubuntu.example.org/ns/state"`, `xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes"`,
		`xmlns:cp="https://accessibility.ubuntu.example.org/ns/component"`, `xmlns:val="https://accessibility.ubuntu.example.org/ns/value"`,
		`<application name="soffice"`, `<frame name="t.csv - LibreOffice Calc"`, `<application name="gnome-shell"`,
		`<push-button name="Files" st:enabled="true" st:sensitive="true" st:visible="true" st:showing="true" st:focusable="true" attr:id="dock/files" cp:screencoord="(8, 4)" cp:size="(104, 24)">`,
		`b &amp; &lt;c&gt;</table-cell>`, `<document-spreadsheet name="Sheet"`} {
		if !strings.Contains(string(x), want) {
			t.Errorf("XML lacks %s", want)
		}
	}
	if len(root.Apps) != 2 || root.Apps[1].Name != "soffice" || root.Apps[1].Frames[0].XMLName.Local != "frame" {
		t.Fatalf("applications %+v", root.Apps)
	}
	// The JSON tree converts to the same XML.
	if j, err := TreeJSONToXML(d.Tree()); err != nil || string(j) != string(x) {
		t.Fatalf("JSON -> XML differs: %v", err)
	}
}

func TestLinearizeAT(t *testing.T) {
	// A tree as an OSWorld VM sends it.
	vm := `<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" xmlns:cp="https://accessibility.ubuntu.example.org/ns/component">` +
		`<application name="gedit" st:showing="true" st:visible="true" st:enabled="true">` +
		`<push-button name="OK" st:showing="true" st:visible="true" st:enabled="true" attr:class="push button" cp:screencoord="(10, 20)" cp:size="(30, 40)">Click "me"</push-button>` +
		`<push-button name="Hidden" st:visible="true" st:enabled="true" cp:screencoord="(1, 2)" cp:size="(3, 4)"/>` +
		`<label name="Off screen" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(-5, 2)" cp:size="(3, 4)"/>` +
		`<text name="" st:showing="true" st:visible="true" st:editable="true" cp:screencoord="(0, 0)" cp:size="(9, 9)">typed</text>` +
		`<frame name="A frame" st:showing="true" st:visible="true" st:enabled="true" cp:screencoord="(0, 0)" cp:size="(9, 9)"/>` +
		`</application></desktop-frame>`
	got, err := LinearizeAT([]byte(vm))
	if err != nil {
		t.Fatal(err)
	}
	want := "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n" +
		"push-button\tOK\t\"Click \"\"me\"\"\"\t\t\t(10, 20)\t(30, 40)\n" + // class is read through the windows namespace, as upstream
		"text\t\ttyped\t\t\t(0, 0)\t(9, 9)"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The simulator's tree, from XML or JSON, gives the same table.
	d := newDesk(t, 1)
	fromXML, err := LinearizeAT(d.TreeXML())
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := LinearizeAT(d.Tree())
	if err != nil || fromJSON != fromXML {
		t.Fatalf("JSON and XML linearise differently: %v", err)
	}
	if !strings.Contains(fromXML, "push-button\tFiles\t\"\"\t\t\t(8, 4)\t(104, 24)") {
		t.Fatalf("dock button missing:\n%s", fromXML)
	}
	if _, err := LinearizeAT([]byte("<a><b></a>")); err == nil {
		t.Fatal("malformed XML accepted")
	}
}

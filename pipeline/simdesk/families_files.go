package simdesk

import (
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

// Shared parameter values of the built-in families.
var (
	topics      = []string{"budget", "meeting", "roadmap", "invoice", "travel", "recipes", "garden", "training", "launch", "inventory", "hiring", "research", "vendors", "backlog"}
	folderNames = []string{"Projects", "Archive", "Reports", "Invoices", "Drafts", "Travel", "Receipts", "Clients", "Taxes", "Scans", "Notes", "Old"}
	placeNames  = []string{"Documents", "Desktop", "Downloads", "Pictures"}
	people      = []string{"Alice Martin", "Bob Chen", "Carol Diaz", "Dan Evans", "Erin Fox", "Frank Green", "Grace Hall", "Hank Irwin", "Ivy Jones", "Jack King", "Kate Lee", "Liam Moore"}
)

func emailOf(person string) string {
	parts := strings.Fields(strings.ToLower(person))
	return parts[0] + "." + parts[len(parts)-1] + "@example.com"
}

func fileText(topic string, i int) string {
	return fmt.Sprintf("%s notes\nowner: %s\nstatus: draft %d\n", strings.ToUpper(topic[:1])+topic[1:], pick(people, i), i+1)
}

func filesFamilies() []family {
	return []family{
		{id: "files-mkdir", app: "files", abilities: []string{"navigate", "create_folder"}, n: 10, gen: func(i int) taskSpec {
			name, place := pick(folderNames, i), pick(placeNames, i/3)
			p := "~/" + place + "/" + name
			return taskSpec{param: name + "@" + place,
				instruction: fmt.Sprintf("Create a new folder named %q in your %s folder.", name, place),
				criteria:    []judge.Criterion{folderExists(p)}}
		}},
		{id: "files-newfile", app: "files", abilities: []string{"navigate", "create_file"}, n: 8, gen: func(i int) taskSpec {
			name := pick(topics, i+3) + ".txt"
			place := pick(placeNames, i+1)
			p := "~/" + place + "/" + name
			return taskSpec{param: name + "@" + place,
				instruction: fmt.Sprintf("Using the file manager, create an empty file called %q in %s.", name, place),
				criteria:    []judge.Criterion{exists(p)}}
		}},
		{id: "files-rename", app: "files", abilities: []string{"navigate", "select", "rename"}, n: 12, gen: func(i int) taskSpec {
			topic := pick(topics, i)
			place := pick(placeNames, i)
			old := "~/" + place + "/" + topic + "-old.txt"
			nw := "~/" + place + "/" + topic + "-2024.txt"
			text := fileText(topic, i)
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("In the %s folder, rename %q to %q.", place, topic+"-old.txt", topic+"-2024.txt"),
				setup:       []SetupStep{createFile(old, text)},
				criteria:    []judge.Criterion{exists(nw), missing(old), content(nw, text)}}
		}},
		{id: "files-delete", app: "files", abilities: []string{"navigate", "select", "delete"}, n: 10, gen: func(i int) taskSpec {
			topic, other := pick(topics, i+5), pick(topics, i+6)
			place := pick(placeNames, i+2)
			victim := "~/" + place + "/" + topic + "-copy.txt"
			keep := "~/" + place + "/" + other + ".txt"
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("Delete the file %q from the %s folder. Leave the other files alone.", topic+"-copy.txt", place),
				setup:       []SetupStep{createFile(victim, fileText(topic, i)), createFile(keep, fileText(other, i))},
				criteria:    []judge.Criterion{missing(victim), exists(keep)}}
		}},
		{id: "files-move", app: "files", abilities: []string{"navigate", "select", "move", "drag"}, n: 12, gen: func(i int) taskSpec {
			topic := pick(topics, i+2)
			name := topic + ".txt"
			src := "~/Downloads/" + name
			text := fileText(topic, i)
			var dstDir, where string
			setup := []SetupStep{createFile(src, text)}
			if i%2 == 0 {
				folder := pick(folderNames, i/2)
				dstDir, where = "~/Documents/"+folder, "the "+folder+" folder inside Documents"
				setup = append(setup, createFolder(dstDir))
			} else {
				dstDir = "~/" + pick([]string{"Desktop", "Documents", "Pictures"}, i/2)
				where = "the " + dstDir[2:] + " folder"
			}
			dst := dstDir + "/" + name
			return taskSpec{param: topic + ">" + dstDir,
				instruction: fmt.Sprintf("Move %q from Downloads into %s.", name, where),
				setup:       setup,
				criteria:    []judge.Criterion{exists(dst), missing(src), content(dst, text)}}
		}},
		{id: "files-organize", app: "files", abilities: []string{"navigate", "create_folder", "move", "multi_step"}, n: 8, gen: func(i int) taskSpec {
			folder := pick(folderNames, i+4)
			n := 2 + i%3
			var setup []SetupStep
			var crits []judge.Criterion
			crits = append(crits, folderExists("~/Documents/"+folder))
			for k := 0; k < n; k++ {
				name := pick(topics, i+k*3) + ".txt"
				setup = append(setup, createFile("~/Downloads/"+name, fileText(name, k)))
				crits = append(crits, exists("~/Documents/"+folder+"/"+name), missing("~/Downloads/"+name))
			}
			other := "~/Downloads/" + pick(topics, i+1) + "-data.csv"
			setup = append(setup, createFile(other, "a,b\n1,2\n"))
			crits = append(crits, exists(other))
			return taskSpec{param: fmt.Sprintf("%s/%d", folder, n),
				instruction: fmt.Sprintf("Create a folder named %q inside Documents and move every .txt file from Downloads into it. Leave other files where they are.", folder),
				setup:       setup, criteria: crits}
		}},
	}
}

package simdesk

import (
	"fmt"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

func mailField(field string) *judge.Getter { return &judge.Getter{Type: "sent_mail", Field: field} }

func mailFamilies() []family {
	strip := judge.Options{Strip: true}
	return []family{
		{id: "mail-send", app: "mail", abilities: []string{"compose", "type", "send"}, n: 12, gen: func(i int) taskSpec {
			to := emailOf(pick(people, i))
			subject := fmt.Sprintf("%s update", pick([]string{"Budget", "Roadmap", "Launch", "Travel", "Hiring", "Vendor"}, i))
			body := pick(sentences, i+2)
			return taskSpec{param: to + "/" + subject,
				instruction: fmt.Sprintf("Send an email to %s with the subject %q and the body %q.", to, subject, body),
				criteria: []judge.Criterion{crit("exact_match", mailField("to"), rule(to)), crit("exact_match", mailField("subject"), rule(subject)),
					critOpt("exact_match", mailField("body"), rule(body), strip)}}
		}},
		{id: "mail-reply", app: "mail", abilities: []string{"read", "reply", "type", "send"}, n: 8, gen: func(i int) taskSpec {
			from := pick(people, i+3)
			addr := emailOf(from)
			subject := fmt.Sprintf("Question about the %s", pick(topics, i))
			answer := pick([]string{"Yes, that works for me.", "I will send it tomorrow.", "Let us discuss on Monday.", "Thanks, approved."}, i)
			return taskSpec{param: addr,
				instruction: fmt.Sprintf("Reply to the email from %s about %q with the text %q.", from, subject, answer),
				setup: []SetupStep{openApp("mail"), Step("add_mail", map[string]string{"from": addr, "subject": subject,
					"body": fmt.Sprintf("Hi,\ncould you confirm the %s plan?\n%s", pick(topics, i), from)})},
				criteria: []judge.Criterion{crit("exact_match", mailField("to"), rule(addr)), crit("exact_match", mailField("subject"), rule("Re: "+subject)),
					crit("check_include_exclude", mailField("body"), include(answer))}}
		}},
		{id: "mail-attach", app: "mail", abilities: []string{"compose", "attach", "send"}, n: 8, gen: func(i int) taskSpec {
			to := emailOf(pick(people, i+5))
			topic := pick(topics, i+1)
			p := "~/Documents/" + topic + "-summary.txt"
			abs, _ := vfs.Clean(p)
			subject := fmt.Sprintf("%s summary", topic)
			return taskSpec{param: to + "/" + topic,
				instruction: fmt.Sprintf("Email the file %s to %s as an attachment, with the subject %q.", p, to, subject),
				setup:       []SetupStep{createFile(p, fileText(topic, i))},
				criteria: []judge.Criterion{crit("exact_match", mailField("to"), rule(to)), crit("exact_match", mailField("subject"), rule(subject)),
					crit("compare_list", mailField("attachments"), rule([]any{abs}))}}
		}},
		{id: "mail-cc", app: "mail", abilities: []string{"compose", "type", "send"}, n: 6, gen: func(i int) taskSpec {
			to, cc := emailOf(pick(people, i+1)), emailOf(pick(people, i+7))
			subject := fmt.Sprintf("%s kickoff", pick(topics, i+3))
			body := pick(sentences, i+5) + "\n" + pick(sentences, i+6)
			return taskSpec{param: to + "+" + cc,
				instruction: fmt.Sprintf("Write an email to %s, with %s in Cc, subject %q, and this body:\n%s\nThen send it.", to, cc, subject, body),
				criteria: []judge.Criterion{crit("exact_match", mailField("to"), rule(to)), crit("exact_match", mailField("cc"), rule(cc)),
					crit("exact_match", mailField("subject"), rule(subject)), critOpt("exact_match", mailField("body"), rule(body), strip)}}
		}},
		{id: "mail-infeasible", app: "mail", abilities: []string{"infeasible"}, n: 4, gen: func(i int) taskSpec {
			asks := []string{"Schedule an email to the team to be sent tomorrow at 9am.", "Set up an automatic vacation reply.",
				"Add a digital signature certificate to outgoing mail.", "Recall the last message you sent."}
			return taskSpec{param: asks[i], instruction: asks[i], infeasible: true}
		}},
	}
}

// crossFamilies are tasks that need two apps.
func crossFamilies() []family {
	return []family{
		{id: "cross-report", app: "editor", abilities: []string{"read_sheet", "type", "save_as", "multi_app"}, n: 8, gen: func(i int) taskSpec {
			t := salesTable(i+11, 3+i%3)
			sheetPath := fmt.Sprintf("~/Documents/%s-q%d.csv", pick(cities, i+1), 1+i%4)
			report := fmt.Sprintf("~/Desktop/total-%d.txt", i+1)
			total := aggregate("SUM", column(t, 1))
			want := fmt.Sprintf("Total amount: %v", total)
			return taskSpec{param: sheetPath,
				instruction: fmt.Sprintf("Look up the amounts in %s and write a text file %s containing one line: \"Total amount: <sum of the Amount column>\".", sheetPath, report),
				setup:       []SetupStep{createFile(sheetPath, tableCSV(t))},
				criteria:    []judge.Criterion{critOpt("exact_match", fileGetter("file_content", report), rule(want), judge.Options{Strip: true})}}
		}},
		{id: "cross-mail-file", app: "mail", abilities: []string{"create_file", "attach", "send", "multi_app"}, n: 6, gen: func(i int) taskSpec {
			to := emailOf(pick(people, i+2))
			p := fmt.Sprintf("~/Documents/%s-agenda.txt", pick(topics, i+9))
			abs, _ := vfs.Clean(p)
			text := "Agenda\n" + listDoc(i, 2)
			return taskSpec{param: to + p,
				instruction: fmt.Sprintf("Write an agenda file %s with this content:\n%s\nThen email it as an attachment to %s with the subject \"Agenda\".", p, text, to),
				criteria: []judge.Criterion{content(p, text), crit("exact_match", mailField("to"), rule(to)), crit("exact_match", mailField("subject"), rule("Agenda")),
					crit("compare_list", mailField("attachments"), rule([]any{abs}))}}
		}},
	}
}

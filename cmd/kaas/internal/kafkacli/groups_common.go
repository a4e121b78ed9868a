package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// What kafka-share-groups.sh and kafka-streams-groups.sh share: flag
// placement checks, --state parsing, the --list views and (with
// kafka-consumer-groups.sh) the --describe view check. The reset planning
// and --topic parsing come from consumer-groups (cgOptions).

// groupsFlagRule says which actions a flag goes with.
type groupsFlagRule struct {
	flag    string
	actions []string
}

// groupsCheckPlacement refuses a flag given with an action it does not go
// with, naming both, rather than ignoring it.
func groupsCheckPlacement(given map[string]bool, action string, rules []groupsFlagRule) error {
	for _, r := range rules {
		if given[r.flag] && !slices.Contains(r.actions, action) {
			return fmt.Errorf("option --%s can only be used with --%s", r.flag, strings.Join(r.actions, " or --"))
		}
	}
	return nil
}

// groupsParseStates reads --list --state's comma-separated states as
// Kafka's GroupState.parse does (any case), answered in Kafka's spelling;
// a state the group type does not have is refused with Kafka's message.
func groupsParseStates(in string, valid []string) ([]string, error) {
	if in == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(in, ",") {
		i := slices.IndexFunc(valid, func(v string) bool { return strings.EqualFold(strings.TrimSpace(s), v) })
		if i < 0 {
			return nil, fmt.Errorf("--state: invalid state list '%s'. Valid states are: %s", in, strings.Join(valid, ", "))
		}
		out = append(out, valid[i])
	}
	return out, nil
}

// groupsList prints the groups of one type as Kafka's share and streams
// tools do: one id a line, or with --state a GROUP/STATE table whose group
// column fits the longest id (at least 15).
func groupsList(ctx context.Context, adm *kadm.Client, out io.Writer, groupType string, withState bool, states []string) error {
	listed, err := adm.ListGroupsByType(ctx, []string{groupType}, states...)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	groups := listed.Sorted()
	if !withState {
		for _, g := range groups {
			fmt.Fprintln(out, g.Group)
		}
		return nil
	}
	w := 15
	for _, g := range groups {
		w = max(w, len(g.Group))
	}
	fmt.Fprintf(out, "%-*s %s\n", w, "GROUP", "STATE")
	for _, g := range groups {
		state := g.State
		if state == "" {
			state = "Unknown"
		}
		fmt.Fprintf(out, "%-*s %s\n", w, g.Group, state)
	}
	return nil
}

// groupsListed is the listing of the groups of one type, by id.
func groupsListed(ctx context.Context, adm *kadm.Client, groupType string) (kadm.ListedGroups, error) {
	listed, err := adm.ListGroupsByType(ctx, []string{groupType})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return listed, nil
}

// groupsDeleted runs DeleteGroups for ids and prints Kafka's outcome lines
// for a group type ("share", "streams"); refused are the groups the tool
// refused before asking, with why. The groups deleted are returned.
func groupsDeleted(ctx context.Context, adm *kadm.Client, out io.Writer, kind string, ids []string, refused map[string]string) ([]string, error) {
	var ask []string
	for _, id := range ids {
		if _, no := refused[id]; !no && !slices.Contains(ask, id) {
			ask = append(ask, id)
		}
	}
	failed := map[string]string{}
	for id, why := range refused {
		failed[id] = why
	}
	var deleted []string
	if len(ask) > 0 {
		resps, err := adm.DeleteGroups(ctx, ask...)
		if err != nil && len(resps) == 0 {
			return nil, fmt.Errorf("delete groups: %w", err)
		}
		for _, id := range ask {
			r, ok := resps[id]
			switch {
			case !ok:
				failed[id] = fmt.Sprintf("no answer from its coordinator (%v)", err)
			case r.Err != nil:
				failed[id] = r.Err.Error()
			default:
				deleted = append(deleted, id)
			}
		}
	}
	quoted := func(ids []string) string { return "'" + strings.Join(ids, "', '") + "'" }
	if len(failed) == 0 {
		fmt.Fprintf(out, "Deletion of requested %s groups (%s) was successful.\n", kind, quoted(deleted))
		return deleted, nil
	}
	fmt.Fprintf(out, "\nError: Deletion of some %s groups failed:\n", kind)
	var names []string
	for _, id := range ids {
		if _, ok := failed[id]; ok && !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	for _, id := range names {
		fmt.Fprintf(out, "* Group '%s' could not be deleted due to: %s\n", id, failed[id])
	}
	if len(deleted) > 0 {
		fmt.Fprintf(out, "\nThese %s groups were deleted successfully: %s\n", kind, quoted(deleted))
	}
	return deleted, fmt.Errorf("%d of %d %s groups could not be deleted", len(names), len(names)+len(deleted), kind)
}

// groupsPrintResetPlan prints new offsets as Kafka's reset tools do.
func groupsPrintResetPlan(out io.Writer, groups []string, plans map[string]cgPlan) {
	row := func(g, t, p, off string) { fmt.Fprintf(out, "\n%-30s %-30s %-10s %-15s", g, t, p, off) }
	row("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, g := range groups {
		for _, tp := range plans[g].sorted() {
			row(g, tp.topic, fmt.Sprint(tp.partition), fmt.Sprint(plans[g][tp]))
		}
	}
	fmt.Fprintln(out)
}

// groupsDescribeView checks --describe's view flags, as the group tools'
// options classes do: at most one of --members, --offsets, --state, and
// --state without a value.
func groupsDescribeView(given map[string]bool, state string) error {
	n := 0
	for _, f := range []string{"members", "offsets", "state"} {
		if given[f] {
			n++
		}
	}
	if n > 1 {
		return errors.New("option --describe takes at most one of these options: --members, --offsets, --state")
	}
	if given["state"] && state != "" {
		return fmt.Errorf("option --describe does not take a value for --state (got %q)", state)
	}
	return nil
}

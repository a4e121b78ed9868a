package kafkacli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kaas delegation-tokens is Kafka 4's kafka-delegation-tokens.sh
// (DelegationTokenCommand): create, renew, expire and describe the
// delegation tokens (KIP-48) of the principal --command-config logs in as.
var _ = register(Tool{Name: "delegation-tokens", Kafka: "kafka-delegation-tokens.sh", Run: runDelegationTokens})

// tokenDateLayout is Kafka's SimpleDateFormat("yyyy-MM-dd'T'HH:mm"), in the
// local time zone as the JVM's default.
const tokenDateLayout = "2006-01-02T15:04"

func runDelegationTokens(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var (
		conn                       Conn
		create, renew, expire, dsc bool
		owners, renewers           Repeated
		maxLife, renewPeriod       int64
		expiryPeriod               int64
		hmac                       string
	)
	fs := NewFlagSet("delegation-tokens", stderr)
	conn.Register(fs)
	fs.BoolVar(&create, "create", false, "create a new delegation token (--renewer-principal names its renewers)")
	fs.BoolVar(&renew, "renew", false, "renew a delegation token (--hmac, --renew-time-period)")
	fs.BoolVar(&expire, "expire", false, "expire a delegation token (--hmac, --expiry-time-period)")
	fs.BoolVar(&dsc, "describe", false, "describe the tokens of --owner-principal, or else those the user owns, renews or may describe")
	fs.Var(&owners, "owner-principal", "a principal, principalType:name: the owner of the token to create (--create), or an owner to describe (--describe, repeatable)")
	fs.Var(&renewers, "renewer-principal", "a principal, principalType:name, who may renew the token (repeatable)")
	fs.Int64Var(&maxLife, "max-life-time-period", 0, "the token's maximum life in milliseconds; -1 for the broker's delegation.token.max.lifetime.ms")
	fs.Int64Var(&renewPeriod, "renew-time-period", 0, "the renewal in milliseconds; -1 for the broker's delegation.token.expiry.time.ms")
	fs.Int64Var(&expiryPeriod, "expiry-time-period", 0, "the expiry in milliseconds from now; -1 invalidates the token at once")
	fs.StringVar(&hmac, "hmac", "", "the token's HMAC, base64 as --create and --describe print it")
	if len(args) == 0 {
		fs.Usage()
		return errors.New("This tool helps to create, renew, expire, or describe delegation tokens.")
	}
	set, err := Parse(fs, args)
	if err != nil {
		return err
	}
	action, err := OneAction(fs, "create", "renew", "expire", "describe")
	if err != nil {
		return errors.New("Command must include exactly one action: --create, --renew, --expire or --describe")
	}
	// Kafka's checkArgs: token operations need a secure login, hence a
	// required --command-config.
	required := map[string][]string{
		"create": {"max-life-time-period"},
		"renew":  {"hmac", "renew-time-period"},
		"expire": {"hmac", "expiry-time-period"},
	}
	for _, name := range append([]string{"bootstrap-server", "command-config"}, required[action]...) {
		if !set[name] {
			return fmt.Errorf(`Missing required argument "[%s]"`, name)
		}
	}
	invalid := map[string][]string{
		"create":   {"hmac", "renew-time-period", "expiry-time-period"},
		"renew":    {"renewer-principal", "max-life-time-period", "expiry-time-period", "owner-principal"},
		"expire":   {"max-life-time-period", "renew-time-period", "owner-principal", "renewer-principal"},
		"describe": {"renew-time-period", "max-life-time-period", "hmac", "expiry-time-period", "renewer-principal"},
	}
	for _, name := range invalid[action] {
		if set[name] {
			return fmt.Errorf("Option \"[%s]\" can't be used with option \"[%s]\"", action, name)
		}
	}
	ownerPs, err := tokenPrincipals("owner-principal", owners)
	if err != nil {
		return err
	}
	renewerPs, err := tokenPrincipals("renewer-principal", renewers)
	if err != nil {
		return err
	}
	if action == "create" && len(ownerPs) > 1 {
		return errors.New("--owner-principal: a token has one owner; give it once with --create")
	}
	var mac []byte
	if set["hmac"] {
		if mac, err = base64.StdEncoding.DecodeString(hmac); err != nil || len(mac) == 0 {
			return fmt.Errorf("--hmac %q: not a token's HMAC in base64", hmac)
		}
	}

	_, adm, err := conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	switch action {
	case "create":
		fmt.Fprintf(stdout, "Calling create token operation with renewers :%s , max-life-time-period :%d\n", principalList(renewerPs), maxLife)
		req := kadm.CreateDelegationToken{Renewers: renewerPs, MaxLifetime: time.Duration(maxLife) * time.Millisecond}
		if len(ownerPs) == 1 {
			req.Owner = &ownerPs[0]
		}
		tok, err := adm.CreateDelegationToken(ctx, req)
		if err != nil {
			return fmt.Errorf("create delegation token: %w", err)
		}
		fmt.Fprintf(stdout, "Created delegation token with tokenId : %s\n", tok.TokenID)
		printTokens(stdout, []kadm.DelegationToken{tok})
	case "renew":
		fmt.Fprintf(stdout, "Calling renew token operation with hmac :%s , renew-time-period :%d\n", hmac, renewPeriod)
		exp, err := adm.RenewDelegationToken(ctx, mac, time.Duration(renewPeriod)*time.Millisecond)
		if err != nil {
			return fmt.Errorf("renew delegation token: %w", err)
		}
		fmt.Fprintf(stdout, "Completed renew operation. New expiry date : %s\n", exp.Local().Format(tokenDateLayout))
	case "expire":
		fmt.Fprintf(stdout, "Calling expire token operation with hmac :%s , expire-time-period :%d\n", hmac, expiryPeriod)
		exp, err := adm.ExpireDelegationToken(ctx, mac, time.Duration(expiryPeriod)*time.Millisecond)
		if err != nil {
			return fmt.Errorf("expire delegation token: %w", err)
		}
		fmt.Fprintf(stdout, "Completed expire operation. New expiry date : %s\n", exp.Local().Format(tokenDateLayout))
	case "describe":
		if len(ownerPs) == 0 {
			fmt.Fprintln(stdout, "Calling describe token operation for current user.")
		} else {
			fmt.Fprintf(stdout, "Calling describe token operation for owners: %s\n", principalList(ownerPs))
		}
		toks, err := adm.DescribeDelegationTokens(ctx, ownerPs...)
		if err != nil {
			return fmt.Errorf("describe delegation tokens: %w", err)
		}
		fmt.Fprintf(stdout, "Total number of tokens : %d", len(toks))
		printTokens(stdout, toks)
	}
	return nil
}

// tokenPrincipals parses principals as Kafka's SecurityUtils.parseKafkaPrincipal:
// principalType:name, split at the first colon.
func tokenPrincipals(flagName string, values []string) ([]kadm.Principal, error) {
	var out []kadm.Principal
	for _, v := range values {
		typ, name, ok := strings.Cut(strings.TrimSpace(v), ":")
		if !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("--%s: expected a string in format principalType:principalName but got %s", flagName, v)
		}
		out = append(out, kadm.Principal{Type: typ, Name: name})
	}
	return out, nil
}

func principalText(p kadm.Principal) string { return p.Type + ":" + p.Name }

// principalList is a list of principals as Java prints a List: [User:a, User:b].
func principalList(ps []kadm.Principal) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = principalText(p)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// printTokens is Kafka's token table: a header and one row per token, each
// preceded by an empty line (Kafka's format starts with %n).
func printTokens(w io.Writer, toks []kadm.DelegationToken) {
	const row = "\n%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s\n"
	fmt.Fprintf(w, row, "TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
	for _, t := range toks {
		fmt.Fprintf(w, row, t.TokenID, base64.StdEncoding.EncodeToString(t.HMAC), principalText(t.Owner),
			principalText(t.TokenRequesterPrincipal), principalList(t.Renewers),
			t.IssueTimestamp.Local().Format(tokenDateLayout), t.ExpiryTimestamp.Local().Format(tokenDateLayout),
			t.MaxTimestamp.Local().Format(tokenDateLayout))
	}
}

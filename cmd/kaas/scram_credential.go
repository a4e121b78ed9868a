package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kaas-project/kaas/wire/sasl"
)

// runScramCredential is `kaas scram-credential USER`: it reads the password
// from stdin (first line) and prints a --sasl-credentials-file document
// holding USER's salted SCRAM-SHA-256 and SCRAM-SHA-512 credentials, so
// that the password itself is never stored.
func runScramCredential(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kaas scram-credential", flag.ContinueOnError)
	fs.SetOutput(stderr)
	iterations := fs.Int("iterations", 8192, "PBKDF2 iterations (at least 4096)")
	mechs := fs.String("mechanisms", sasl.ScramSHA256+","+sasl.ScramSHA512, "SCRAM mechanisms to salt the password for")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kaas scram-credential [flags] USER < password")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		fs.Usage()
		return errors.New("scram-credential: want one user name")
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("scram-credential: read password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("scram-credential: empty password on stdin")
	}
	entry := map[string]sasl.ScramCredential{}
	for _, m := range strings.Split(*mechs, ",") {
		cred, err := sasl.NewScramCredential(strings.TrimSpace(m), password, *iterations)
		if err != nil {
			return fmt.Errorf("scram-credential: %w", err)
		}
		entry[strings.TrimSpace(m)] = cred
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{fs.Arg(0): entry}})
}

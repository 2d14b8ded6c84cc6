package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxSecretFileBytes bounds a secret file.
const maxSecretFileBytes = 64 << 10

// resolve reads the secret: the environment variable, or the file
// (relative to home unless absolute), which must be a regular file that
// neither its group nor others may read or write, as ssh requires of keys.
func (s *Secret) resolve(home string, getenv func(string) string) error {
	switch {
	case s.File != "":
		v, err := readSecretFile(home, s.File)
		if err != nil {
			return err
		}
		s.value = v
	case s.Env != "":
		s.value = getenv(s.Env)
	default:
		return nil
	}
	s.resolved = true
	return nil
}

// SecretPath is where a secret file named in the config lives: name itself
// when absolute, else name under home.
func SecretPath(home, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(home, name)
}

// readSecretFile reads a secret file, trimmed of surrounding white space.
func readSecretFile(home, name string) (string, error) {
	path := SecretPath(home, name)
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return "", fmt.Errorf("secret file: %w", err)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("secret file %s is not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("secret file %s may be read by other users (mode %04o): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("secret file %s: %w", path, err)
	}
	if len(b) > maxSecretFileBytes {
		return "", fmt.Errorf("secret file %s is larger than %d bytes", path, maxSecretFileBytes)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", errors.New("secret file " + path + " is empty")
	}
	return v, nil
}

// WriteSecretFile writes value to the secret file name (relative to home
// unless absolute), readable only by its owner, creating its directory
// (0700) when missing. It replaces an existing file atomically.
func WriteSecretFile(home, name, value string) error {
	path := SecretPath(home, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("secret file: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return fmt.Errorf("secret file: %w", err)
	}
	defer os.Remove(f.Name())
	// CreateTemp makes the file 0600.
	if _, err := f.WriteString(value + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("secret file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("secret file %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("secret file %s: %w", path, err)
	}
	return nil
}

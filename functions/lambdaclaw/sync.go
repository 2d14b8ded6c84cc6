package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// outWorkspaceBucket is the stack output naming the workspace bucket
// (infra/workspace.go); an agent's workspace is agents/NAME/ in it.
const outWorkspaceBucket = "WorkspaceBucket"

// envS3Endpoint overrides S3's endpoint, for tests against an
// S3-compatible server (addressed path-style).
const envS3Endpoint = "S3_ENDPOINT"

// syncAgent runs `lambdaclaw agent push|pull NAME --stack S`: push makes
// the deployed agent's workspace (agents/NAME/ in the stack's bucket)
// equal to the local one ($LAMBDACLAW_HOME/agents/NAME), pull the local
// one equal to the deployed one. Both print what they change, one file a
// line ("+" added, "~" updated, "-" deleted), and with --dry-run only
// what they would change.
func syncAgent(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	about := "Copy the local workspace of agent NAME to the deployed stack's bucket (agents/NAME/), making the deployed\n" +
		"copy equal to it: changed and new files are uploaded, files gone locally deleted. Links and special files are skipped."
	if sub == "pull" {
		about = "Copy the deployed workspace of agent NAME (agents/NAME/ in the stack's bucket) into the local one,\n" +
			"making it equal: changed and new files are written, local files the stack has not deleted."
	}
	fset := newFlags("agent "+sub, "NAME --stack STACK", about, stderr)
	loadConfig := fset.withConfig()
	st := fset.withStack()
	dry := fset.Bool("dry-run", false, "print what would change, and change nothing")
	pos, err := fset.parse(args[1:], 1, 1, stdout)
	if err != nil {
		return err
	}
	if !st.remote() {
		return fmt.Errorf("agent %s copies between the local workspace and a deployed stack: name it with --stack", sub)
	}
	name := pos[0]
	if err := workspace.ValidName(name); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	dir := workspace.Dir(cfg.Home, name)
	if fi, err := os.Stat(dir); sub == "push" && errors.Is(err, fs.ErrNotExist) {
		return missingAgent(cfg.Home, name)
	} else if err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	d, err := st.open(ctx)
	if err != nil {
		return err
	}
	files, err := d.files()
	if err != nil {
		return err
	}
	remote, err := files.Sub(workspace.Path(name))
	if err != nil {
		return err
	}
	local := osroot.New(dir)
	where := fmt.Sprintf("%s, s3://%s/%s/", d.where(), d.outputs[outWorkspaceBucket], workspace.Path(name))
	dst, src := filestore.FS(remote), filestore.FS(local)
	if sub == "pull" {
		dst, src = local, remote
		if es, err := remote.ReadDir(ctx, ".", 1); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		} else if len(es) == 0 {
			return fmt.Errorf("%s holds no workspace of agent %q: `lambdaclaw agent push %s --stack %s` puts one there", where, name, name, *st.name)
		}
	}
	changes, err := filestore.Sync(ctx, dst, src, filestore.SyncOptions{
		MaxFileBytes: cfg.Limits.MaxFileBytes, MaxTotalBytes: cfg.Limits.WorkspaceQuotaBytes, DryRun: *dry,
	})
	counts := map[filestore.ChangeKind]int{}
	for _, c := range changes {
		counts[c.Kind]++
		switch c.Kind {
		case filestore.Skipped:
			what := "not a regular file"
			if c.Mode&fs.ModeSymlink != 0 {
				what = "a symbolic link"
			}
			fmt.Fprintf(stderr, "skipped %s: %s\n", c.Name, what)
		case filestore.Added:
			fmt.Fprintf(stdout, "+ %s (%d bytes)\n", c.Name, c.Size)
		case filestore.Updated:
			fmt.Fprintf(stdout, "~ %s (%d bytes)\n", c.Name, c.Size)
		case filestore.Deleted:
			fmt.Fprintf(stdout, "- %s\n", c.Name)
		}
	}
	if err != nil {
		if errors.Is(err, filestore.ErrConflict) {
			err = fmt.Errorf("%w: the agent wrote it during the %s; run it again", err, sub)
		}
		return fmt.Errorf("agent %s %s (%s): %w", sub, name, where, err)
	}
	verb := map[bool]string{true: "would change", false: "changed"}[*dry]
	fmt.Fprintf(stderr, "%s %s: %s %d added, %d updated, %d deleted (%s)\n", sub, name, verb,
		counts[filestore.Added], counts[filestore.Updated], counts[filestore.Deleted], where)
	return nil
}

// files is the stack's workspace bucket (output WorkspaceBucket).
func (d *deployment) files() (filestore.FS, error) {
	if err := d.need(outWorkspaceBucket); err != nil {
		return nil, err
	}
	f, err := s3fs.Open(d.aws, getenv(envS3Endpoint), d.outputs[outWorkspaceBucket])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.where(), err)
	}
	return f, nil
}

// Drives a Gantry server through Ollama's own Go client (github.com/ollama/ollama/api, pinned in go.mod): every /api
// route, with the requests as the Go client builds them. Its structs have no `omitempty` on many fields, so unset
// strings go out as "", maps and slices as null, and the checks here send Go's zero values on purpose. Each check
// prints "ok <name>" or "FAIL <name>: <why>"; the exit status is 1 when any failed. A 500 is always a failure.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

var (
	host  = flag.String("host", "", "the server's URL")
	gguf  = flag.String("gguf", "", "a chat model's GGUF file, created on the server as \"smol\" (served with a context of 512)")
	pull  = flag.String("pull", "", "a hub model to pull, by `name` only (as older callers do)")
	ctx   = context.Background()
	fails = 0
)

func check(name string, fn func() error) {
	start := time.Now()
	err := fn()
	var se api.StatusError
	if errors.As(err, &se) && se.StatusCode >= 500 && se.StatusCode != http.StatusNotImplemented {
		err = fmt.Errorf("server error %d: %s", se.StatusCode, se.ErrorMessage)
	}
	if err != nil {
		fails++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("ok %s (%d ms)\n", name, time.Since(start).Milliseconds())
}

// status wants err to be the server's answer with that HTTP status.
func status(err error, code int, text string) error {
	var se api.StatusError
	if !errors.As(err, &se) {
		return fmt.Errorf("want a %d, got %v", code, err)
	}
	if se.StatusCode != code || !strings.Contains(se.ErrorMessage, text) {
		return fmt.Errorf("want %d %q, got %d %q", code, text, se.StatusCode, se.ErrorMessage)
	}
	return nil
}

func want(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

func generate(req *api.GenerateRequest) (api.GenerateResponse, error) {
	var last api.GenerateResponse
	err := client.Generate(ctx, req, func(r api.GenerateResponse) error { last = r; return nil })
	return last, err
}

func chat(req *api.ChatRequest) (api.ChatResponse, error) {
	var last api.ChatResponse
	err := client.Chat(ctx, req, func(r api.ChatResponse) error { last = r; return nil })
	return last, err
}

var client *api.Client

func main() {
	flag.Parse()
	base, err := url.Parse(*host)
	if err != nil || *gguf == "" {
		fmt.Println("usage: go-client -host URL -gguf FILE [-pull NAME]")
		os.Exit(2)
	}
	client = api.NewClient(base, http.DefaultClient)
	f := false
	quiet := func(extra map[string]any) map[string]any {
		o := map[string]any{"num_predict": 4, "temperature": 0, "seed": rand.Int()}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}

	check("version", func() error {
		v, err := client.Version(ctx)
		return errors.Join(err, want(v != "", "no version"))
	})
	check("create from an uploaded blob", func() error {
		data, err := os.ReadFile(*gguf)
		if err != nil {
			return err
		}
		digest := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		if err := client.CreateBlob(ctx, digest, strings.NewReader(string(data))); err != nil {
			return err
		}
		var last string
		err = client.Create(ctx, &api.CreateRequest{Model: "smol", Files: map[string]string{"smol.gguf": digest}},
			func(p api.ProgressResponse) error { last = p.Status; return nil })
		return errors.Join(err, want(last == "success", "last status %q", last))
	})
	check("create: zero values are a 400", func() error {
		return status(client.Create(ctx, &api.CreateRequest{}, func(api.ProgressResponse) error { return nil }), 400, "")
	})
	check("list", func() error {
		l, err := client.List(ctx)
		if err != nil {
			return err
		}
		return want(slices.ContainsFunc(l.Models, func(m api.ListModelResponse) bool { return m.Name == "smol:latest" }),
			"smol:latest not listed")
	})
	check("show by the deprecated name, model empty", func() error {
		s, err := client.Show(ctx, &api.ShowRequest{Name: "smol"})
		if err != nil {
			return err
		}
		return want(slices.Contains(s.Capabilities, "completion"), "capabilities %v", s.Capabilities)
	})
	check("show: zero values are a 400", func() error {
		_, err := client.Show(ctx, &api.ShowRequest{})
		return status(err, 400, "required")
	})
	check("show: an unknown model is a 404", func() error {
		_, err := client.Show(ctx, &api.ShowRequest{Model: "nothing-here"})
		return status(err, 404, "")
	})
	check("copy", func() error { return client.Copy(ctx, &api.CopyRequest{Source: "smol", Destination: "smol-alias"}) })
	check("copy: zero values are a 400", func() error { return status(client.Copy(ctx, &api.CopyRequest{}), 400, "") })
	check("generate: zero values load the model", func() error {
		r, err := generate(&api.GenerateRequest{Model: "smol"})
		return errors.Join(err, want(r.Done && r.DoneReason == "load", "done %v %q", r.Done, r.DoneReason))
	})
	check("generate as the Go client sends it (empty system, template, suffix; an int64 seed)", func() error {
		r, err := generate(&api.GenerateRequest{Model: "smol", Prompt: "Hello", Options: quiet(nil)})
		return errors.Join(err, want(r.Done && r.EvalCount > 0 && r.EvalCount <= 4 && len(r.Context) > 0,
			"done %v, %d tokens, context %d", r.Done, r.EvalCount, len(r.Context)))
	})
	check("generate: zero options (num_ctx 0, top_k 0, …) are the defaults", func() error {
		r, err := generate(&api.GenerateRequest{Model: "smol", Prompt: "Hi", Raw: false,
			Options: quiet(map[string]any{"num_ctx": 0, "top_k": 0, "top_p": 0, "min_p": 0, "num_keep": 0})})
		return errors.Join(err, want(r.Done, "not done"))
	})
	check("generate: the same seed gives the same answer", func() error {
		o := map[string]any{"num_predict": 6, "temperature": 1, "seed": 8674665223082153551}
		a, err := generate(&api.GenerateRequest{Model: "smol", Prompt: "Tell me", Options: o})
		if err != nil {
			return err
		}
		b, err := generate(&api.GenerateRequest{Model: "smol", Prompt: "Tell me", Options: o})
		return errors.Join(err, want(a.Response == b.Response, "%q then %q", a.Response, b.Response))
	})
	check("generate: a prompt longer than the context is cut, truncate false refuses it", func() error {
		long := strings.Repeat("hello ", 700)
		o := quiet(nil)
		r, err := generate(&api.GenerateRequest{Model: "smol", Prompt: long, Options: o})
		if err != nil {
			return err
		}
		if r.PromptEvalCount >= 512 {
			return fmt.Errorf("prompt_eval_count %d", r.PromptEvalCount)
		}
		_, err = generate(&api.GenerateRequest{Model: "smol", Prompt: long, Options: o, Truncate: &f})
		return status(err, 400, "context length")
	})
	check("ps lists the model by the name used last", func() error {
		if _, err := generate(&api.GenerateRequest{Model: "smol-alias", Prompt: "Hi", Options: quiet(nil)}); err != nil {
			return err
		}
		p, err := client.ListRunning(ctx)
		if err != nil {
			return err
		}
		return want(len(p.Models) == 1 && p.Models[0].Name == "smol-alias:latest", "running %+v", p.Models)
	})
	check("chat: zero values load the model", func() error {
		r, err := chat(&api.ChatRequest{Model: "smol"})
		return errors.Join(err, want(r.Done && r.DoneReason == "load", "done %v %q", r.Done, r.DoneReason))
	})
	check("chat", func() error {
		r, err := chat(&api.ChatRequest{Model: "smol", Messages: []api.Message{{Role: "user", Content: "Hi"}},
			Options: quiet(nil)})
		return errors.Join(err, want(r.Done && r.Message.Role == "assistant", "%+v", r))
	})
	check("chat: empty messages and tools load the model", func() error {
		r, err := chat(&api.ChatRequest{Model: "smol", Messages: []api.Message{}, Tools: api.Tools{}})
		return errors.Join(err, want(r.Done, "not done"))
	})
	check("chat: a long history loses its oldest turns", func() error {
		msgs := []api.Message{{Role: "system", Content: "Be brief."}}
		for range 12 {
			msgs = append(msgs, api.Message{Role: "user", Content: strings.Repeat("words ", 60)},
				api.Message{Role: "assistant", Content: "ok"})
		}
		msgs = append(msgs, api.Message{Role: "user", Content: "Bye"})
		r, err := chat(&api.ChatRequest{Model: "smol", Messages: msgs, Options: quiet(nil)})
		return errors.Join(err, want(r.Done && r.PromptEvalCount < 512, "prompt_eval_count %d", r.PromptEvalCount))
	})
	check("chat: think on a model without thinking is Ollama's 400", func() error {
		_, err := chat(&api.ChatRequest{Model: "smol", Messages: []api.Message{{Role: "user", Content: "Hi"}},
			Think: &api.ThinkValue{Value: "low"}})
		return status(err, 400, "does not support thinking")
	})
	check("embed", func() error {
		r, err := client.Embed(ctx, &api.EmbedRequest{Model: "smol", Input: "hi"})
		return errors.Join(err, want(len(r.Embeddings) == 1 && len(r.Embeddings[0]) > 0, "%d embeddings", len(r.Embeddings)))
	})
	check("embed: a nil input loads the model and embeds nothing", func() error {
		r, err := client.Embed(ctx, &api.EmbedRequest{Model: "smol"})
		return errors.Join(err, want(len(r.Embeddings) == 0, "%d embeddings", len(r.Embeddings)))
	})
	check("embed: an input longer than the context with truncate false", func() error {
		_, err := client.Embed(ctx, &api.EmbedRequest{Model: "smol", Input: strings.Repeat("hello ", 700),
			Truncate: &f})
		return status(err, 400, "the input length exceeds the context length")
	})
	check("embeddings (legacy)", func() error {
		r, err := client.Embeddings(ctx, &api.EmbeddingRequest{Model: "smol", Prompt: "hi"})
		return errors.Join(err, want(len(r.Embedding) > 0, "empty embedding"))
	})
	check("embeddings: an empty prompt embeds nothing", func() error {
		r, err := client.Embeddings(ctx, &api.EmbeddingRequest{Model: "smol"})
		return errors.Join(err, want(len(r.Embedding) == 0, "%d values", len(r.Embedding)))
	})
	if *pull != "" {
		check("pull by the deprecated name, model empty", func() error {
			var last string
			err := client.Pull(ctx, &api.PullRequest{Name: *pull}, func(p api.ProgressResponse) error { last = p.Status; return nil })
			return errors.Join(err, want(last == "success", "last status %q", last))
		})
	}
	check("pull: zero values are a 400", func() error {
		return status(client.Pull(ctx, &api.PullRequest{}, func(api.ProgressResponse) error { return nil }), 400, "")
	})
	check("push is a 501 that says why", func() error {
		err := client.Push(ctx, &api.PushRequest{Model: "smol"}, func(api.ProgressResponse) error { return nil })
		return status(err, 501, "pushing models is not supported")
	})
	check("delete by the deprecated name, model empty", func() error {
		if err := client.Delete(ctx, &api.DeleteRequest{Name: "smol-alias"}); err != nil {
			return err
		}
		l, err := client.List(ctx)
		return errors.Join(err, want(!slices.ContainsFunc(l.Models, func(m api.ListModelResponse) bool {
			return m.Name == "smol-alias:latest"
		}), "still listed"))
	})
	check("delete: zero values are a 400", func() error { return status(client.Delete(ctx, &api.DeleteRequest{}), 400, "") })
	if fails > 0 {
		fmt.Printf("%d checks failed\n", fails)
		os.Exit(1)
	}
}

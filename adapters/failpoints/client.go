package failpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The points of the protocol, in the order a delivery reaches them.
const (
	AfterInsertBeforeCommit   = "after-insert-before-commit"
	AfterCommitBeforeResponse = "after-commit-before-response"
	AfterResponse             = "after-response"
)

// The actions of the protocol.
const (
	ActionCrash = "crash"
	ActionError = "error"
)

// Points lists every point in protocol order.
var Points = []string{AfterInsertBeforeCommit, AfterCommitBeforeResponse, AfterResponse}

// DefaultPath is the protocol's default path under the receiver's base URL.
const DefaultPath = "/_hookcert/failpoints"

// maxBody bounds what the client reads of a response.
const maxBody = 1 << 20

// Arming is one armed point; EventID "" means any event.
type Arming struct {
	Point   string `json:"point"`
	EventID string `json:"event_id"`
	Action  string `json:"action"`
}

// Client talks to one receiver's failpoint endpoints.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for baseURL+path (DefaultPath when path is ""); a nil
// httpClient means http.DefaultClient.
func New(baseURL, path string, httpClient *http.Client) *Client {
	if path == "" {
		path = DefaultPath
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/") + "/" + strings.Trim(path, "/"), http: httpClient}
}

// StatusError is a response other than the expected one; Reason is the server's
// JSON "error" (or the start of its body).
type StatusError struct {
	Op     string
	Status int
	Field  string
	Reason string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("failpoints: %s: %d %s", e.Op, e.Status, http.StatusText(e.Status))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Arm arms point to apply action when the receiver handles eventID ("" for the
// next event of any ID). The receiver answers 204.
func (c *Client) Arm(ctx context.Context, point, eventID, action string) error {
	var errs []error
	if !contains(Points, point) {
		errs = append(errs, fmt.Errorf("failpoints: point: must be one of %s, got %q", strings.Join(Points, ", "), point))
	}
	if action != ActionCrash && action != ActionError {
		errs = append(errs, fmt.Errorf("failpoints: action: must be %q or %q, got %q", ActionCrash, ActionError, action))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The point is in the path, not the body; an absent event_id means any event.
	body, err := json.Marshal(struct {
		EventID string `json:"event_id,omitempty"`
		Action  string `json:"action"`
	}{eventID, action})
	if err != nil {
		return fmt.Errorf("failpoints: arm %s: %w", point, err)
	}
	op := fmt.Sprintf("arm %s (%s) for event %q", point, action, eventID)
	_, err = c.do(ctx, op, http.MethodPut, c.base+"/"+point, body, http.StatusNoContent)
	return err
}

// List returns the armed points.
func (c *Client) List(ctx context.Context) ([]Arming, error) {
	data, err := c.do(ctx, "list", http.MethodGet, c.base, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var out []Arming
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("failpoints: list: response is not a JSON array of armings: %w", err)
	}
	return out, nil
}

// Reset disarms every point.
func (c *Client) Reset(ctx context.Context) error {
	_, err := c.do(ctx, "reset", http.MethodDelete, c.base, nil, http.StatusNoContent)
	return err
}

func (c *Client) do(ctx context.Context, op, method, url string, body []byte, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("failpoints: %s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failpoints: %s: %w", op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("failpoints: %s: read response: %w", op, err)
	}
	if resp.StatusCode != want {
		se := &StatusError{Op: op, Status: resp.StatusCode}
		var e struct {
			Error string `json:"error"`
			Field string `json:"field"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			se.Reason, se.Field = e.Error, e.Field
		} else {
			se.Reason = strings.TrimSpace(string(data))
			if len(se.Reason) > 200 {
				se.Reason = se.Reason[:200] + "..."
			}
		}
		if resp.StatusCode == http.StatusNotFound && se.Field == "" {
			se.Reason = strings.TrimSpace(se.Reason + " (the receiver does not expose the failpoint protocol at " + url + ": started without failpoints enabled?)")
		}
		return nil, se
	}
	return data, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

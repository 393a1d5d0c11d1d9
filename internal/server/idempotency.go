package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
)

// IdempotencyHeader names the request header that makes a deployment request safe to retry: a request
// that carries a key already answered gets the stored answer again, without a second effect. Keys are
// opaque (a UUID per logical call), at most maxIdempotencyKey bytes, and kept for IdempotencyTTL.
const IdempotencyHeader = "Idempotency-Key"

// IdempotencyTTL is how long the answer to an Idempotency-Key is kept; the collector deletes older ones.
const IdempotencyTTL = 24 * time.Hour

const maxIdempotencyKey = 255

// txFunc is the body of a request's transaction: its result is the handler's answer.
type txFunc func(ctx context.Context, tx *storage.Tx) (any, error)

// once runs f in one transaction and returns its answer. With an Idempotency-Key header it first claims
// the key in the same transaction (an insert, which waits for a concurrent request with the same key to
// end): a key already answered returns the stored answer instead of running f (422 when it answered
// another method or path), and f's answer is stored with the key before the commit. An error from f rolls
// everything back, the key included, so that the request can be retried. The deployment events f notes
// (webhooks.go) are handed to the webhooks after the commit, and only then; a stored answer notifies none.
func (s *Server) once(r *http.Request, f txFunc) (any, error) {
	ctx, ob := s.withOutbox(r.Context(), r.PathValue("org"), r.PathValue("project"))
	key := r.Header.Get(IdempotencyHeader)
	if len(key) > maxIdempotencyKey {
		return nil, errorf(http.StatusBadRequest, "Bad Request: %s is longer than %d bytes", IdempotencyHeader, maxIdempotencyKey)
	}
	var res any
	if key == "" {
		err := s.inTx(ctx, func(tx *storage.Tx) error {
			ob.reset()
			var err error
			res, err = f(ctx, tx)
			return err
		})
		if err == nil {
			s.flush(ob)
		}
		return res, err
	}
	where := r.Method + " " + r.URL.Path
	var stored *storedAnswer
	err := s.inTx(ctx, func(tx *storage.Tx) error {
		ob.reset()
		a, claimed, err := tx.ClaimKey(ctx, key, where, s.now())
		if err != nil {
			return err
		}
		if !claimed {
			stored = &storedAnswer{path: a.Path, status: a.Status, body: a.Body}
			return nil
		}
		if res, err = f(ctx, tx); err != nil {
			return err
		}
		status, body := http.StatusNoContent, []byte(nil)
		if _, ok := res.(noContent); !ok {
			if body, err = json.Marshal(res); err != nil {
				return err
			}
			status = http.StatusOK
		}
		return tx.StoreAnswer(ctx, key, status, body)
	})
	if err != nil {
		return nil, err
	}
	if stored == nil {
		s.flush(ob)
		return res, nil
	}
	return stored.answer(key, r)
}

// storedAnswer is the answer stored with an idempotency key.
type storedAnswer struct {
	path   string
	status int
	body   []byte
}

// answer is the stored answer as a handler's result; 422 when the key was used for another request.
func (a *storedAnswer) answer(key string, r *http.Request) (any, error) {
	if where := r.Method + " " + r.URL.Path; a.path != where {
		return nil, errorf(http.StatusUnprocessableEntity, "Unprocessable Entity: %s %q was used for %s; send a new key for each request", IdempotencyHeader, key, a.path)
	}
	if a.status == http.StatusNoContent {
		return noContent{}, nil
	}
	return rawJSON(a.body), nil
}

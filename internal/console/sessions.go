package console

import (
	"context"
	"sync"
	"time"
)

// Session is one logged-in browser: the random ID its cookie carries (32 bytes, base64url), its caller,
// the CSRF token its forms carry, and when it was created and ends.
type Session struct {
	ID      string
	Caller  Caller
	CSRF    string
	Created time.Time
	Expires time.Time
}

// SessionStore keeps the console's sessions (Options.Sessions). cdkx console keeps them in its process
// (NewMemorySessions); cdkx server in its database, so that every replica behind a load balancer knows
// every session and a restart logs nobody out. Implementations are safe for concurrent use.
type SessionStore interface {
	// Put stores a new session.
	Put(ctx context.Context, s Session) error
	// Get returns the session with this ID, or nil when there is none or it expired at now (an expired
	// one may be removed).
	Get(ctx context.Context, id string, now time.Time) (*Session, error)
	// Delete removes the session with this ID (none: no error).
	Delete(ctx context.Context, id string) error
}

// NewMemorySessions returns a SessionStore in memory holding at most max sessions: when it is full,
// expired ones go first, then the oldest.
func NewMemorySessions(max int) SessionStore {
	return &memorySessions{m: map[string]Session{}, max: max}
}

// memorySessions is the in-memory SessionStore. mu guards m.
type memorySessions struct {
	mu  sync.Mutex
	m   map[string]Session
	max int
}

func (s *memorySessions) Put(_ context.Context, ss Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, x := range s.m { // expired ones first
		if !ss.Created.Before(x.Expires) {
			delete(s.m, id)
		}
	}
	for len(s.m) >= s.max {
		var oldest *Session
		for _, x := range s.m {
			if oldest == nil || x.Created.Before(oldest.Created) {
				oldest = &x
			}
		}
		delete(s.m, oldest.ID)
	}
	s.m[ss.ID] = ss
	return nil
}

func (s *memorySessions) Get(_ context.Context, id string, now time.Time) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return nil, nil
	}
	if !now.Before(ss.Expires) {
		delete(s.m, id)
		return nil, nil
	}
	return &ss, nil
}

func (s *memorySessions) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

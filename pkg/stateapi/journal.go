package stateapi

import "encoding/json"

// JournalEntries is the body of PATCH …/{kind}/{id}/journalentries (apitype.JournalEntries): a batch of
// journal entries (apitype.JournalEntry, version 1), kept as raw JSON so that fields the server does not
// know are stored as sent.
type JournalEntries struct {
	Entries []json.RawMessage `json:"entries,omitempty"`
}

package console

import "net/http"

type console struct {
	src  Source
	opts Options
	mux  *http.ServeMux
}

func newConsole(src Source, opts Options) *console {
	c := &console{src: src, opts: opts, mux: http.NewServeMux()}
	return c
}

func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mux.ServeHTTP(w, r)
}

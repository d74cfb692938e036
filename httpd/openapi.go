package httpd

import (
	_ "embed"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// openAPI is the OpenAPI 3.1 document of every route in the table, with
// each route's access level in x-comb-access. docs/openapi.json is a copy
// kept identical by a test, for readers of the repository.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document served at /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

func (s *Handler) openapi(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	setJSONHeaders(w, len(openAPI))
	w.WriteHeader(http.StatusOK)
	w.Write(openAPI)
}

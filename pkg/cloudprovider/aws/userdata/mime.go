package userdata

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"sort"
	"strings"
)

// Content types of the parts of a cloud-init MIME archive.
const (
	ContentTypeShell      = "text/x-shellscript"
	ContentTypeCloudInit  = "text/cloud-config"
	ContentTypeNodeConfig = "application/node.eks.aws"
)

// Boundary is the MIME boundary of the archives joiner writes (Karpenter's).
const Boundary = "//"

// Part is one part of a MIME multipart user data archive.
type Part struct {
	// ContentType is the part's media type with its parameters, e.g.
	// text/x-shellscript; charset="us-ascii".
	ContentType string
	// Header holds the part's other headers (Content-Transfer-Encoding,
	// ...), kept verbatim.
	Header map[string]string
	// Body is the part's content, as written (not transfer-decoded).
	Body string
}

// MediaType is the part's media type without parameters, lower case.
func (p Part) MediaType() string {
	mt, _, err := mime.ParseMediaType(p.ContentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.Split(p.ContentType, ";")[0]))
	}
	return mt
}

// IsMIME reports whether s looks like a MIME message: its first line is a
// MIME header. cloud-init decides the same way.
func IsMIME(s string) bool {
	first, _, _ := strings.Cut(strings.TrimLeft(s, "\r\n"), "\n")
	first = strings.ToLower(first)
	return strings.HasPrefix(first, "mime-version:") || strings.HasPrefix(first, "content-type:")
}

// ParseMIME splits a multipart MIME archive into its parts. The error
// says what is wrong with the archive, in terms a user can fix.
func ParseMIME(s string) ([]Part, error) {
	r := textproto.NewReader(bufio.NewReader(strings.NewReader(strings.TrimLeft(s, "\r\n"))))
	header, err := r.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("reading the MIME headers: %w", err)
	}
	ct := header.Get("Content-Type")
	if ct == "" {
		return nil, errors.New("the MIME archive has no Content-Type header; start it with Content-Type: multipart/mixed; boundary=\"...\"")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("the Content-Type header %q does not parse: %w", ct, err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return nil, fmt.Errorf("the Content-Type is %s, want multipart/mixed", mt)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, fmt.Errorf("the Content-Type %q has no boundary parameter; add boundary=\"//\" and separate the parts with --//", ct)
	}
	mr := multipart.NewReader(r.R, boundary)
	var parts []Part
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading part %d: %w (is every part introduced by --%s and the archive closed by --%s--?)", len(parts)+1, err, boundary, boundary)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading part %d: %w (is the archive closed by --%s--?)", len(parts)+1, err, boundary)
		}
		part := Part{ContentType: p.Header.Get("Content-Type"), Body: string(body)}
		if part.ContentType == "" {
			part.ContentType = `text/plain; charset="us-ascii"`
		}
		for k := range p.Header {
			if k == "Content-Type" {
				continue
			}
			if part.Header == nil {
				part.Header = map[string]string{}
			}
			part.Header[k] = p.Header.Get(k)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("the MIME archive has no parts separated by --%s", boundary)
	}
	return parts, nil
}

// WriteMIME writes parts as a multipart/mixed archive with Boundary, LF
// line endings (as Karpenter writes them; cloud-init accepts both). When a
// part's body holds the delimiter --// (a user's script that prints a MIME
// archive, say), another boundary is chosen: with Boundary that line would
// end the part early, forge parts, or close the archive before joiner's
// bootstrap part, and the node would never join.
func WriteMIME(parts []Part) string {
	boundary := boundaryFor(parts)
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		fmt.Fprintf(&b, "--%s\n", boundary)
		fmt.Fprintf(&b, "Content-Type: %s\n", p.ContentType)
		keys := make([]string, 0, len(p.Header))
		for k := range p.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, p.Header[k])
		}
		b.WriteString("\n")
		b.WriteString(p.Body)
		if !strings.HasSuffix(p.Body, "\n") {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "--%s--\n", boundary)
	return b.String()
}

// boundaryFor returns Boundary, or the first of //1, //2, ... that no
// part's body contains after "--".
func boundaryFor(parts []Part) string {
	for n := 0; ; n++ {
		boundary := Boundary
		if n > 0 {
			boundary = fmt.Sprintf("%s%d", Boundary, n)
		}
		clash := false
		for _, p := range parts {
			if strings.Contains(p.Body, "--"+boundary) {
				clash = true
				break
			}
		}
		if !clash {
			return boundary
		}
	}
}

// scriptPart wraps a non-MIME user script as a part, with the content
// type cloud-init would infer from its first line; ok is false when the
// first line names no format cloud-init knows.
func scriptPart(s string) (Part, bool) {
	first, _, _ := strings.Cut(strings.TrimLeft(s, "\r\n"), "\n")
	switch {
	case strings.HasPrefix(first, "#!"):
		return Part{ContentType: ContentTypeShell + `; charset="us-ascii"`, Body: s}, true
	case strings.HasPrefix(first, "#cloud-config"):
		return Part{ContentType: ContentTypeCloudInit + `; charset="us-ascii"`, Body: s}, true
	}
	return Part{}, false
}

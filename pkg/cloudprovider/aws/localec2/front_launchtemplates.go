package localec2

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// maxLaunchTemplateResults is the largest MaxResults EC2 accepts on
// DescribeLaunchTemplates.
const maxLaunchTemplateResults = 200

// describeLaunchTemplates pages DescribeLaunchTemplates as EC2 does: moto
// answers at most MaxResults (15 by default) templates and never a
// NextToken, so the front asks moto for all of them and hands out pages of
// MaxResults (1 to 200) with a NextToken while more remain; without
// MaxResults every matching template comes in one answer.
func (f *Front) describeLaunchTemplates(req *http.Request, form url.Values) (*http.Response, error) {
	size := 0
	if v := form.Get("MaxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLaunchTemplateResults {
			return xmlResponse(req, http.StatusBadRequest, ec2Error("InvalidParameterValue",
				fmt.Sprintf("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 1 and %d.", v, maxLaunchTemplateResults))), nil
		}
		size = n
	}
	offset := 0
	if tok := form.Get("NextToken"); tok != "" {
		n, err := decodePageToken(tok)
		if err != nil {
			return xmlResponse(req, http.StatusBadRequest, ec2Error("InvalidNextToken", "The specified NextToken is not valid.")), nil
		}
		offset = n
	}
	all := url.Values{}
	for k, v := range form {
		all[k] = v
	}
	all.Del("NextToken")
	all.Set("MaxResults", "1000000")
	var set struct {
		Items []rawItem `xml:"item"`
	}
	if refused, _, err := f.forwardSet(req, all, "launchTemplates", &set); refused != nil || err != nil {
		return refused, err
	}
	items := make([]string, 0, len(set.Items))
	for _, it := range set.Items {
		items = append(items, it.Inner)
	}
	offset = min(offset, len(items))
	end, next := len(items), ""
	if size > 0 && offset+size < len(items) {
		end, next = offset+size, encodePageToken(offset+size)
	}
	return xmlResponse(req, http.StatusOK, itemsAnswer("DescribeLaunchTemplates", "launchTemplates", items[offset:end], next)), nil
}

// encodePageToken is the front's NextToken for the page starting at
// offset: opaque to callers, as EC2's are.
func encodePageToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("local-front:" + strconv.Itoa(offset)))
}

func decodePageToken(tok string) (int, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscanf(string(raw), "local-front:%d", &n); err != nil || n < 0 {
		return 0, fmt.Errorf("next token %q is not the front's", tok)
	}
	return n, nil
}

package localec2

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PlacementFront serves what moto 5.2 lacks about where instances land:
// On-Demand Capacity Reservations and placement groups. It answers their
// EC2 calls itself (CreateCapacityReservation, DescribeCapacityReservations,
// CancelCapacityReservation, CreatePlacementGroup, DescribePlacementGroups,
// DeletePlacementGroup), remembers what each launch template created
// through it asks for (CapacityReservationSpecification, Placement), holds
// every CreateFleet to it before moto launches anything, and writes the
// result back into DescribeInstances (capacityReservationId, placement
// groupName and partitionNumber), which moto would leave empty. Every other
// request goes to Next untouched.
//
// What EC2 does and the front does too:
//   - a launch template targeting a reservation launches only into it: an
//     override of another instance type or zone fails with
//     InvalidParameterCombination, an unknown reservation with
//     InvalidCapacityReservationId.NotFound, and a reservation without room
//     (or no longer active) with ReservationCapacityExceeded; an instant
//     fleet launches what the reservation has room for and reports the
//     rest with that error;
//   - an on-demand launch that does not target one runs in an open
//     reservation of its instance type and zone while it has room, unless
//     its template's preference is none;
//   - terminating an instance gives its reservation the room back;
//   - a launch template naming an unknown placement group fails with
//     InvalidPlacementGroup.Unknown; an instance in a partition group gets
//     a partition (the template's, or the next one in turn).
//
// Imitated, not EC2's own: the cluster group's single-zone and the spread
// group's seven-per-zone limits are not enforced; capacity blocks cannot
// be bought (AddReservation adds one); error messages are paraphrased.
type PlacementFront struct {
	Next http.RoundTripper
	// OwnerID is the account reservations belong to (moto's).
	OwnerID string

	mu           sync.Mutex
	now          func() time.Time
	seq          int
	reservations map[string]*reservation // id ->
	groups       map[string]*placementGroup
	templates    map[string]templatePlacement // launch template name ->
	placed       map[string]*placedInstance   // instance id ->
	zones        map[string]string            // subnet id -> zone
}

// Reservation is a capacity reservation AddReservation creates.
type Reservation struct {
	InstanceType, Zone string
	Count              int
	// MatchCriteria is open (the default) or targeted.
	MatchCriteria string
	// Type is default or capacity-block.
	Type string
	Tags map[string]string
	// End, when set, is when the reservation ends.
	End *time.Time
}

type reservation struct {
	Reservation
	id, state string
	created   time.Time
	used      map[string]bool // instance ids running in it
}

func (r *reservation) room() int { return r.Count - len(r.used) }

type placementGroup struct {
	name, id, strategy string
	partitions         int
	tags               map[string]string
	next               int
}

// templatePlacement is what a launch template asks about placement.
type templatePlacement struct {
	reservation, preference string
	group, groupID          string
	partition               int
}

type placedInstance struct {
	reservation, group, groupID string
	partition                   int
}

// NewPlacementFront returns a front over next (nil: http.DefaultTransport)
// for moto's account.
func NewPlacementFront(next http.RoundTripper) *PlacementFront {
	if next == nil {
		next = http.DefaultTransport
	}
	return &PlacementFront{
		Next: next, OwnerID: motoAccountID, now: time.Now,
		reservations: map[string]*reservation{}, groups: map[string]*placementGroup{},
		templates: map[string]templatePlacement{}, placed: map[string]*placedInstance{}, zones: map[string]string{},
	}
}

// AddReservation creates a reservation as EC2 would hold it, also the kinds
// CreateCapacityReservation cannot make (a capacity block), and returns its
// id.
func (f *PlacementFront) AddReservation(r Reservation) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addReservation(r)
}

func (f *PlacementFront) addReservation(r Reservation) string {
	if r.MatchCriteria == "" {
		r.MatchCriteria = "open"
	}
	if r.Type == "" {
		r.Type = "default"
	}
	f.seq++
	id := fmt.Sprintf("cr-%017x", 0x5eed0000+f.seq)
	f.reservations[id] = &reservation{Reservation: r, id: id, state: "active", created: f.now(), used: map[string]bool{}}
	return id
}

// SetReservationState moves a reservation to state (expired, cancelled,
// ...), as EC2 does when it ends.
func (f *PlacementFront) SetReservationState(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.reservations[id]; ok {
		r.state = state
	}
}

// ReservationUse is how many instances run in reservation id.
func (f *PlacementFront) ReservationUse(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.reservations[id]; ok {
		return len(r.used)
	}
	return 0
}

// served are the actions the front answers itself.
var served = map[string]bool{
	"CreateCapacityReservation": true, "DescribeCapacityReservations": true, "CancelCapacityReservation": true,
	"CreatePlacementGroup": true, "DescribePlacementGroups": true, "DeletePlacementGroup": true,
}

// RoundTrip implements http.RoundTripper.
func (f *PlacementFront) RoundTrip(req *http.Request) (*http.Response, error) {
	form, ok := ec2Form(req)
	if !ok {
		return f.Next.RoundTrip(req)
	}
	action := form.Get("Action")
	switch {
	case served[action]:
		f.mu.Lock()
		defer f.mu.Unlock()
		body, code, msg := f.serve(action, form)
		if code != "" {
			return xmlResponse(req, http.StatusBadRequest, ec2Error(code, msg)), nil
		}
		return xmlResponse(req, http.StatusOK, body), nil
	case action == "CreateLaunchTemplate" || action == "CreateLaunchTemplateVersion":
		f.rememberTemplate(form)
		return f.Next.RoundTrip(req)
	case action == "CreateFleet":
		return f.createFleet(req, form)
	case action == "TerminateInstances":
		resp, err := f.Next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			f.release(indexed(form, "InstanceId"))
		}
		return resp, err
	case action == "DescribeInstances":
		resp, err := f.Next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		return f.annotate(req, resp)
	}
	return f.Next.RoundTrip(req)
}

// ec2Form reads an EC2 Query request's form, leaving the body readable
// again; ok is false for anything else.
func ec2Form(req *http.Request) (url.Values, bool) {
	if req.Body == nil || req.Method != http.MethodPost {
		return nil, false
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("Action") == "" || form.Get("Version") != ec2APIVersion {
		return nil, false
	}
	return form, true
}

// indexed lists the values of prefix.1, prefix.2, ...
func indexed(form url.Values, prefix string) []string {
	var out []string
	for i := 1; form.Has(fmt.Sprintf("%s.%d", prefix, i)); i++ {
		out = append(out, form.Get(fmt.Sprintf("%s.%d", prefix, i)))
	}
	return out
}

// filters reads Filter.N.Name / Filter.N.Value.M.
func filters(form url.Values) map[string][]string {
	out := map[string][]string{}
	for i := 1; form.Has(fmt.Sprintf("Filter.%d.Name", i)); i++ {
		out[form.Get(fmt.Sprintf("Filter.%d.Name", i))] = indexed(form, fmt.Sprintf("Filter.%d.Value", i))
	}
	return out
}

// tagsOf reads the tags of resourceType from TagSpecification.N.Tag.M
// (TagSpecifications.N in some actions, as CreateCapacityReservation).
func tagsOf(form url.Values, resourceType string) map[string]string {
	tags := map[string]string{}
	for _, spec := range []string{"TagSpecification", "TagSpecifications"} {
		for i := 1; form.Has(fmt.Sprintf("%s.%d.ResourceType", spec, i)); i++ {
			if form.Get(fmt.Sprintf("%s.%d.ResourceType", spec, i)) != resourceType {
				continue
			}
			for j := 1; form.Has(fmt.Sprintf("%s.%d.Tag.%d.Key", spec, i, j)); j++ {
				tags[form.Get(fmt.Sprintf("%s.%d.Tag.%d.Key", spec, i, j))] = form.Get(fmt.Sprintf("%s.%d.Tag.%d.Value", spec, i, j))
			}
		}
	}
	return tags
}

// matchesFilters applies EC2's filter semantics: every filter must match,
// any of its values; tag:K and tag-key look at tags.
func matchesFilters(fs map[string][]string, fields, tags map[string]string) bool {
	for name, values := range fs {
		switch {
		case strings.HasPrefix(name, "tag:"):
			v, ok := tags[strings.TrimPrefix(name, "tag:")]
			if !ok || !slices.Contains(values, v) {
				return false
			}
		case name == "tag-key":
			if !slices.ContainsFunc(values, func(k string) bool { _, ok := tags[k]; return ok }) {
				return false
			}
		default:
			v, known := fields[name]
			if !known || !slices.Contains(values, v) {
				return false
			}
		}
	}
	return true
}

// serve answers one of the served actions; f.mu is held.
func (f *PlacementFront) serve(action string, form url.Values) (body, code, msg string) {
	switch action {
	case "CreateCapacityReservation":
		n, err := strconv.Atoi(form.Get("InstanceCount"))
		if err != nil || n < 1 {
			return "", "InvalidParameterValue", "InstanceCount must be a positive integer."
		}
		for _, p := range []string{"InstanceType", "InstancePlatform", "AvailabilityZone"} {
			if form.Get(p) == "" {
				return "", "MissingParameter", "The request must contain the parameter " + p + "."
			}
		}
		r := Reservation{InstanceType: form.Get("InstanceType"), Zone: form.Get("AvailabilityZone"), Count: n,
			MatchCriteria: form.Get("InstanceMatchCriteria"), Tags: tagsOf(form, "capacity-reservation")}
		if form.Get("EndDateType") == "limited" {
			end, err := time.Parse(time.RFC3339, form.Get("EndDate"))
			if err != nil {
				return "", "InvalidParameterValue", "EndDate is required and must be a date when EndDateType is limited."
			}
			r.End = &end
		}
		id := f.addReservation(r)
		return response("CreateCapacityReservation", "<capacityReservation>"+f.reservationXML(f.reservations[id])+"</capacityReservation>"), "", ""
	case "DescribeCapacityReservations":
		ids := indexed(form, "CapacityReservationId")
		for _, id := range ids {
			if _, ok := f.reservations[id]; !ok {
				return "", "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
			}
		}
		fs := filters(form)
		var b strings.Builder
		for _, id := range slices.Sorted(maps.Keys(f.reservations)) {
			r := f.reservations[id]
			if len(ids) > 0 && !slices.Contains(ids, id) {
				continue
			}
			fields := map[string]string{"capacity-reservation-id": r.id, "instance-type": r.InstanceType, "availability-zone": r.Zone,
				"owner-id": f.OwnerID, "state": r.state, "instance-match-criteria": r.MatchCriteria, "instance-platform": "Linux/UNIX",
				"tenancy": "default", "reservation-type": r.Type}
			if matchesFilters(fs, fields, r.Tags) {
				b.WriteString("<item>" + f.reservationXML(r) + "</item>")
			}
		}
		return response("DescribeCapacityReservations", "<capacityReservationSet>"+b.String()+"</capacityReservationSet>"), "", ""
	case "CancelCapacityReservation":
		r, ok := f.reservations[form.Get("CapacityReservationId")]
		if !ok {
			return "", "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", form.Get("CapacityReservationId"))
		}
		r.state = "cancelled"
		return response("CancelCapacityReservation", "<return>true</return>"), "", ""
	case "CreatePlacementGroup":
		name, strategy := form.Get("GroupName"), form.Get("Strategy")
		if name == "" {
			name = fmt.Sprintf("pg-auto-%d", f.seq+1)
		}
		if _, ok := f.groups[name]; ok {
			return "", "InvalidPlacementGroup.Duplicate", fmt.Sprintf("The placement group '%s' already exists.", name)
		}
		if !slices.Contains([]string{"cluster", "partition", "spread"}, strategy) {
			return "", "InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter strategy is invalid; use cluster, partition or spread.", strategy)
		}
		g := &placementGroup{name: name, strategy: strategy, tags: tagsOf(form, "placement-group")}
		if strategy == "partition" {
			g.partitions = 2
			if n, err := strconv.Atoi(form.Get("PartitionCount")); err == nil {
				if n < 1 || n > 7 {
					return "", "InvalidParameterValue", "PartitionCount must be between 1 and 7."
				}
				g.partitions = n
			}
		}
		f.seq++
		g.id = fmt.Sprintf("pg-%017x", 0xc0de0000+f.seq)
		f.groups[name] = g
		return response("CreatePlacementGroup", "<return>true</return><placementGroup>"+f.groupXML(g)+"</placementGroup>"), "", ""
	case "DescribePlacementGroups":
		names, ids := indexed(form, "GroupName"), indexed(form, "GroupId")
		for _, n := range names {
			if _, ok := f.groups[n]; !ok {
				return "", "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", n)
			}
		}
		for _, id := range ids {
			if f.groupByID(id) == nil {
				return "", "InvalidPlacementGroupId.NotFound", fmt.Sprintf("The Placement Group ID '%s' does not exist.", id)
			}
		}
		fs := filters(form)
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(f.groups)) {
			g := f.groups[name]
			if (len(names) > 0 || len(ids) > 0) && !slices.Contains(names, g.name) && !slices.Contains(ids, g.id) {
				continue
			}
			if matchesFilters(fs, map[string]string{"group-name": g.name, "group-id": g.id, "strategy": g.strategy, "state": "available"}, g.tags) {
				b.WriteString("<item>" + f.groupXML(g) + "</item>")
			}
		}
		return response("DescribePlacementGroups", "<placementGroupSet>"+b.String()+"</placementGroupSet>"), "", ""
	case "DeletePlacementGroup":
		name := form.Get("GroupName")
		if _, ok := f.groups[name]; !ok {
			return "", "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", name)
		}
		for _, p := range f.placed {
			if p.group == name {
				return "", "InvalidPlacementGroup.InUse", fmt.Sprintf("The placement group '%s' is in use and may not be deleted.", name)
			}
		}
		delete(f.groups, name)
		return response("DeletePlacementGroup", "<return>true</return>"), "", ""
	}
	return "", "InvalidAction", action
}

func (f *PlacementFront) groupByID(id string) *placementGroup {
	for _, g := range f.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

func response(action, inner string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>local-placement</requestId>%s</%sResponse>`, action, inner, action)
}

const ec2Time = "2006-01-02T15:04:05.000Z"

func tagSetXML(tags map[string]string) string {
	var b strings.Builder
	b.WriteString("<tagSet>")
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		fmt.Fprintf(&b, "<item><key>%s</key><value>%s</value></item>", html.EscapeString(k), html.EscapeString(tags[k]))
	}
	b.WriteString("</tagSet>")
	return b.String()
}

func (f *PlacementFront) reservationXML(r *reservation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<capacityReservationId>%s</capacityReservationId><ownerId>%s</ownerId>", r.id, f.OwnerID)
	fmt.Fprintf(&b, "<capacityReservationArn>arn:aws:ec2:%s:%s:capacity-reservation/%s</capacityReservationArn>", Region, f.OwnerID, r.id)
	fmt.Fprintf(&b, "<instanceType>%s</instanceType><instancePlatform>Linux/UNIX</instancePlatform><availabilityZone>%s</availabilityZone><tenancy>default</tenancy>",
		html.EscapeString(r.InstanceType), html.EscapeString(r.Zone))
	fmt.Fprintf(&b, "<totalInstanceCount>%d</totalInstanceCount><availableInstanceCount>%d</availableInstanceCount>", r.Count, max(0, r.room()))
	fmt.Fprintf(&b, "<ebsOptimized>false</ebsOptimized><ephemeralStorage>false</ephemeralStorage><state>%s</state><instanceMatchCriteria>%s</instanceMatchCriteria>", r.state, r.MatchCriteria)
	fmt.Fprintf(&b, "<startDate>%s</startDate><createDate>%s</createDate><reservationType>%s</reservationType><interruptible>false</interruptible>",
		r.created.UTC().Format(ec2Time), r.created.UTC().Format(ec2Time), r.Type)
	if r.End != nil {
		fmt.Fprintf(&b, "<endDateType>limited</endDateType><endDate>%s</endDate>", r.End.UTC().Format(ec2Time))
	} else {
		b.WriteString("<endDateType>unlimited</endDateType>")
	}
	b.WriteString(tagSetXML(r.Tags))
	return b.String()
}

func (f *PlacementFront) groupXML(g *placementGroup) string {
	s := fmt.Sprintf("<groupName>%s</groupName><state>available</state><strategy>%s</strategy><groupId>%s</groupId><groupArn>arn:aws:ec2:%s:%s:placement-group/%s</groupArn>",
		html.EscapeString(g.name), g.strategy, g.id, Region, f.OwnerID, html.EscapeString(g.name))
	if g.partitions > 0 {
		s += fmt.Sprintf("<partitionCount>%d</partitionCount>", g.partitions)
	}
	return s + tagSetXML(g.tags)
}

// rememberTemplate records a launch template's placement by name.
func (f *PlacementFront) rememberTemplate(form url.Values) {
	const d = "LaunchTemplateData."
	tp := templatePlacement{
		reservation: form.Get(d + "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
		preference:  form.Get(d + "CapacityReservationSpecification.CapacityReservationPreference"),
		group:       form.Get(d + "Placement.GroupName"),
		groupID:     form.Get(d + "Placement.GroupId"),
	}
	tp.partition, _ = strconv.Atoi(form.Get(d + "Placement.PartitionNumber"))
	name := form.Get("LaunchTemplateName")
	if name == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.templates[name] = tp
}

// overrideError is one override a fleet could not launch, and why.
type overrideError struct {
	o         fleetOverride
	code, msg string
}

// createFleet holds a CreateFleet to the reservations and placement
// groups its launch templates name, narrows it to the override that
// launches, forwards it, and records where the instances landed.
func (f *PlacementFront) createFleet(req *http.Request, form url.Values) (*http.Response, error) {
	ovs := fleetOverrides(form)
	placements := map[int]templatePlacement{}
	special := false
	f.mu.Lock()
	for _, o := range ovs {
		tp := f.templates[form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", o.config))]
		placements[o.config] = tp
		special = special || tp != (templatePlacement{})
	}
	f.mu.Unlock()
	onDemand := form.Get("TargetCapacitySpecification.DefaultTargetCapacityType") != "spot"
	total, _ := strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	need := max(minTargetCapacity(form), 1)
	forward, count := form, total
	var failed []overrideError
	var chosen *fleetOverride
	if special {
		for i := range ovs {
			o := ovs[i]
			tp := placements[o.config]
			subnet := form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.SubnetId", o.config, o.override))
			zone, err := f.zoneOf(req, subnet)
			if err != nil {
				return nil, err
			}
			f.mu.Lock()
			n, code, msg := f.admit(tp, o.instanceType, zone, total, need)
			f.mu.Unlock()
			if code != "" {
				failed = append(failed, overrideError{o: o, code: code, msg: msg})
				continue
			}
			chosen, count = &o, n
			break
		}
		if chosen == nil {
			return xmlResponse(req, http.StatusOK, fleetErrorSet(form, failed)), nil
		}
		forward = narrowFleet(form, *chosen, count)
		body := forward.Encode()
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	resp, err := f.Next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	launched := fleetInstances(answer)
	zones := make([]string, len(launched))
	for i, li := range launched {
		// A zone that cannot be found only loses the open-reservation match.
		zones[i], _ = f.zoneOf(req, li.subnet)
	}
	f.mu.Lock()
	for i, li := range launched {
		tp := templatePlacement{}
		if chosen != nil {
			tp = placements[chosen.config]
		} else {
			for c := range placements {
				if form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c)) == li.template {
					tp = placements[c]
				}
			}
		}
		for _, id := range li.ids {
			f.place(id, tp, li.instanceType, zones[i], onDemand)
		}
	}
	f.mu.Unlock()
	if chosen != nil && count < total {
		// An instant fleet reports what it could not launch.
		short := []overrideError{{o: *chosen, code: "ReservationCapacityExceeded",
			msg: fmt.Sprintf("Insufficient capacity in the Capacity Reservation %s to launch %d more instances.", placements[chosen.config].reservation, total-count)}}
		answer = []byte(strings.Replace(string(answer), "</CreateFleetResponse>", errorSetXML(form, short, form.Get("TargetCapacitySpecification.DefaultTargetCapacityType"))+"</CreateFleetResponse>", 1))
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	resp.ContentLength = int64(len(answer))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// admit decides one override against its template's placement: how many
// of total it launches, or the error EC2 answers for it; f.mu is held.
func (f *PlacementFront) admit(tp templatePlacement, instanceType, zone string, total, need int) (int, string, string) {
	if tp.group != "" || tp.groupID != "" {
		g := f.groups[tp.group]
		if tp.groupID != "" {
			g = f.groupByID(tp.groupID)
		}
		if g == nil {
			return 0, "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", tp.group+tp.groupID)
		}
		if tp.partition > 0 && (g.strategy != "partition" || tp.partition > g.partitions) {
			return 0, "InvalidParameterValue", fmt.Sprintf("Partition number %d is not valid for placement group %s.", tp.partition, g.name)
		}
	}
	if tp.reservation == "" {
		return total, "", ""
	}
	r, ok := f.reservations[tp.reservation]
	switch {
	case !ok:
		return 0, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", tp.reservation)
	case r.InstanceType != instanceType || r.Zone != zone:
		return 0, "InvalidParameterCombination", fmt.Sprintf("The instance type %s or Availability Zone %s does not match Capacity Reservation %s (%s in %s).", instanceType, zone, r.id, r.InstanceType, r.Zone)
	case r.state != "active" || r.room() < need:
		return 0, "ReservationCapacityExceeded", fmt.Sprintf("Insufficient capacity in the Capacity Reservation %s.", r.id)
	}
	return min(total, r.room()), "", ""
}

// place records where instance id landed; f.mu is held.
func (f *PlacementFront) place(id string, tp templatePlacement, instanceType, zone string, onDemand bool) {
	p := &placedInstance{}
	switch {
	case tp.reservation != "":
		if r, ok := f.reservations[tp.reservation]; ok {
			r.used[id] = true
			p.reservation = r.id
		}
	case onDemand && tp.preference != "none":
		// An untargeted on-demand instance runs in an open reservation of
		// its type and zone while one has room.
		for _, rid := range slices.Sorted(maps.Keys(f.reservations)) {
			r := f.reservations[rid]
			if r.state == "active" && r.MatchCriteria == "open" && r.InstanceType == instanceType && r.Zone == zone && r.room() > 0 {
				r.used[id] = true
				p.reservation = r.id
				break
			}
		}
	}
	g := f.groups[tp.group]
	if tp.groupID != "" {
		g = f.groupByID(tp.groupID)
	}
	if g != nil {
		p.group, p.groupID = g.name, g.id
		if g.strategy == "partition" {
			p.partition = tp.partition
			if p.partition == 0 {
				p.partition = g.next%g.partitions + 1
				g.next++
			}
		}
	}
	if *p != (placedInstance{}) {
		f.placed[id] = p
	}
}

// release gives terminated instances' room back to their reservations.
func (f *PlacementFront) release(ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		if p, ok := f.placed[id]; ok && p.reservation != "" {
			if r, ok := f.reservations[p.reservation]; ok {
				delete(r.used, id)
			}
		}
	}
}

// annotate writes the reservation and placement group of the instances
// the front placed into moto's DescribeInstances answer.
func (f *PlacementFront) annotate(req *http.Request, resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	s := string(body)
	f.mu.Lock()
	for id, p := range f.placed {
		tag := "<instanceId>" + id + "</instanceId>"
		i := strings.Index(s, tag)
		if i < 0 {
			continue
		}
		i += len(tag)
		ins := ""
		if p.reservation != "" {
			ins = "<capacityReservationId>" + p.reservation + "</capacityReservationId>"
		}
		s = s[:i] + ins + s[i:]
		if p.group != "" {
			if j := strings.Index(s[i:], "<placement><groupName/>"); j >= 0 {
				at := i + j
				repl := "<placement><groupName>" + html.EscapeString(p.group) + "</groupName><groupId>" + p.groupID + "</groupId>"
				if p.partition > 0 {
					repl += fmt.Sprintf("<partitionNumber>%d</partitionNumber>", p.partition)
				}
				s = s[:at] + repl + s[at+len("<placement><groupName/>"):]
			}
		}
	}
	f.mu.Unlock()
	resp.Body = io.NopCloser(strings.NewReader(s))
	resp.ContentLength = int64(len(s))
	resp.Header.Del("Content-Length")
	return resp, nil
}

var azPattern = regexp.MustCompile(`<availabilityZone>([^<]+)</availabilityZone>`)

// zoneOf is a subnet's zone, asked of moto once.
func (f *PlacementFront) zoneOf(req *http.Request, subnet string) (string, error) {
	f.mu.Lock()
	zone, ok := f.zones[subnet]
	f.mu.Unlock()
	if ok || subnet == "" {
		return zone, nil
	}
	body := url.Values{"Action": {"DescribeSubnets"}, "Version": {ec2APIVersion}, "SubnetId.1": {subnet}}.Encode()
	ask, err := http.NewRequestWithContext(req.Context(), http.MethodPost, req.URL.String(), strings.NewReader(body))
	if err != nil {
		return "", err
	}
	ask.Header = req.Header.Clone()
	ask.Header.Del("Content-Length")
	ask.Host = req.Host
	resp, err := f.Next.RoundTrip(ask)
	if err != nil {
		return "", fmt.Errorf("finding the zone of subnet %s: %w", subnet, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := azPattern.FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || m == nil {
		return "", fmt.Errorf("finding the zone of subnet %s: %s", subnet, b)
	}
	f.mu.Lock()
	f.zones[subnet] = string(m[1])
	f.mu.Unlock()
	return string(m[1]), nil
}

// launchedItem is one item of a CreateFleet answer's fleetInstanceSet.
type launchedItem struct {
	template, instanceType, subnet string
	ids                            []string
}

// fleetInstances reads a CreateFleet answer's instances.
func fleetInstances(answer []byte) []launchedItem {
	var doc struct {
		Items []struct {
			Template     string   `xml:"launchTemplateAndOverrides>launchTemplateSpecification>launchTemplateName"`
			InstanceType string   `xml:"launchTemplateAndOverrides>overrides>instanceType"`
			Subnet       string   `xml:"launchTemplateAndOverrides>overrides>subnetId"`
			Type         string   `xml:"instanceType"`
			IDs          []string `xml:"instanceIds>item"`
		} `xml:"fleetInstanceSet>item"`
	}
	if err := xml.Unmarshal(answer, &doc); err != nil {
		return nil
	}
	out := make([]launchedItem, 0, len(doc.Items))
	for _, it := range doc.Items {
		typ := it.InstanceType
		if typ == "" {
			typ = it.Type
		}
		out = append(out, launchedItem{template: it.Template, instanceType: typ, subnet: it.Subnet, ids: it.IDs})
	}
	return out
}

// fleetErrorSet is a CreateFleet answer that launched nothing, with an
// error per failed override.
func fleetErrorSet(form url.Values, failed []overrideError) string {
	return `<?xml version="1.0" encoding="UTF-8"?><CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>local-placement</requestId><fleetId>fleet-local-placement</fleetId>` +
		errorSetXML(form, failed, form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")) + `<fleetInstanceSet></fleetInstanceSet></CreateFleetResponse>`
}

func errorSetXML(form url.Values, failed []overrideError, lifecycle string) string {
	var b strings.Builder
	b.WriteString("<errorSet>")
	for _, e := range failed {
		lt := form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", e.o.config))
		subnet := form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.SubnetId", e.o.config, e.o.override))
		fmt.Fprintf(&b, `<item><launchTemplateAndOverrides><launchTemplateSpecification><launchTemplateName>%s</launchTemplateName><version>1</version></launchTemplateSpecification><overrides><instanceType>%s</instanceType><subnetId>%s</subnetId></overrides></launchTemplateAndOverrides><lifecycle>%s</lifecycle><errorCode>%s</errorCode><errorMessage>%s</errorMessage></item>`,
			html.EscapeString(lt), html.EscapeString(e.o.instanceType), html.EscapeString(subnet), lifecycle, e.code, html.EscapeString(e.msg))
	}
	b.WriteString("</errorSet>")
	return b.String()
}

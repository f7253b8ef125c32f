package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

func (sv *solver) indexVolumes() {
	v := sv.snap.Volumes
	sv.pvcs = map[string]*corev1.PersistentVolumeClaim{}
	sv.pvs = map[string]*corev1.PersistentVolume{}
	sv.scs = map[string]*StorageClass{}
	for _, c := range v.PersistentVolumeClaims {
		sv.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, p := range v.PersistentVolumes {
		sv.pvs[p.Name] = p
	}
	for _, s := range v.StorageClasses {
		sv.scs[s.Name] = s
	}
}

// InTreePlugin names the in-tree volume plugin a pod volume uses, if any
// (`joiner doctor` lists such pods before the solver rejects them).
func InTreePlugin(s *corev1.VolumeSource) string { return inTreePlugin(s) }

// InTreePersistentVolumePlugin names the in-tree plugin a PersistentVolume
// uses, if any.
func InTreePersistentVolumePlugin(s *corev1.PersistentVolumeSource) string { return inTreePV(s) }

// inTreePlugin names the in-tree volume plugin a volume source uses, if
// any. joiner only understands CSI volumes.
func inTreePlugin(s *corev1.VolumeSource) string {
	switch {
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.AzureFile != nil:
		return "azureFile"
	case s.Cinder != nil:
		return "cinder"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	case s.PortworxVolume != nil:
		return "portworxVolume"
	}
	return ""
}

func inTreePV(s *corev1.PersistentVolumeSource) string {
	switch {
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.AzureFile != nil:
		return "azureFile"
	case s.Cinder != nil:
		return "cinder"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	case s.PortworxVolume != nil:
		return "portworxVolume"
	}
	return ""
}

// claimDriver is the CSI driver that serves a claim ("" if unknown).
func (sv *solver) claimDriver(ns, name string) string {
	pvc := sv.pvcs[ns+"/"+name]
	if pvc == nil {
		return ""
	}
	if pvc.Spec.VolumeName != "" {
		if pv := sv.pvs[pvc.Spec.VolumeName]; pv != nil && pv.Spec.CSI != nil {
			return pv.Spec.CSI.Driver
		}
	}
	if pvc.Spec.StorageClassName != nil {
		if sc := sv.scs[*pvc.Spec.StorageClassName]; sc != nil {
			return sc.Provisioner
		}
	}
	return ""
}

// maxVolumeAlternatives caps the cross product of volumes' OR'ed terms.
const maxVolumeAlternatives = 16

// volumeRequirements turns the pod's volumes into node requirement
// alternatives (a bound PV's node affinity terms, or an unbound
// WaitForFirstConsumer claim's StorageClass allowedTopologies terms; OR'ed
// terms of several volumes are crossed, first terms first) and counts its
// CSI volumes per driver. Hostname terms (local volumes) are ignored, as
// Karpenter does.
func (sv *solver) volumeRequirements(p *corev1.Pod) ([]reqBuilder, map[string]int, error) {
	alts := []reqBuilder{{}}
	cross := func(terms []reqBuilder) {
		var out []reqBuilder
		for _, a := range alts {
			for _, t := range terms {
				b := reqBuilder{}
				for k, c := range a {
					b[k] = c
				}
				for k, c := range t {
					b.add(k, c)
				}
				if len(out) < maxVolumeAlternatives {
					out = append(out, b)
				}
			}
		}
		alts = out
	}
	drivers := map[string]int{}
	for _, v := range p.Spec.Volumes {
		if pl := inTreePlugin(&v.VolumeSource); pl != "" {
			return nil, nil, Volume{Problem: VolumeInTreePlugin, Volume: v.Name, Plugin: pl}
		}
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		pvc := sv.pvcs[p.Namespace+"/"+name]
		if pvc == nil {
			return nil, nil, Volume{Problem: VolumeClaimNotFound, Claim: name}
		}
		if d := sv.claimDriver(p.Namespace, name); d != "" {
			drivers[d]++
		}
		if pvc.Spec.VolumeName != "" {
			pv := sv.pvs[pvc.Spec.VolumeName]
			if pv == nil {
				return nil, nil, Volume{Problem: VolumeNotFound, PersistentVolume: pvc.Spec.VolumeName, Claim: name}
			}
			if pl := inTreePV(&pv.Spec.PersistentVolumeSource); pl != "" {
				return nil, nil, Volume{Problem: VolumeInTreePersistentVolume, PersistentVolume: pv.Name, Plugin: pl}
			}
			if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil && len(na.Required.NodeSelectorTerms) > 0 {
				var terms []reqBuilder
				for _, t := range na.Required.NodeSelectorTerms {
					b := reqBuilder{}
					for _, e := range t.MatchExpressions {
						if normalizedKey(e.Key) == corev1.LabelHostname {
							continue
						}
						if err := b.addRequirement(normalizedKey(e.Key), e.Operator, e.Values); err != nil {
							return nil, nil, Volume{Problem: VolumeNodeAffinity, PersistentVolume: pv.Name, Detail: err.Error()}
						}
					}
					terms = append(terms, b)
				}
				cross(terms)
			}
			continue
		}
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
			continue
		}
		sc := sv.scs[*pvc.Spec.StorageClassName]
		if sc == nil {
			return nil, nil, Volume{Problem: VolumeStorageClassNotFound, StorageClass: *pvc.Spec.StorageClassName, Claim: name}
		}
		if !sc.WaitForFirstConsumer || len(sc.AllowedTopologies) == 0 {
			continue
		}
		var terms []reqBuilder
		for _, t := range sc.AllowedTopologies {
			b := reqBuilder{}
			for _, e := range t.MatchLabelExpressions {
				if normalizedKey(e.Key) == corev1.LabelHostname {
					continue
				}
				if err := b.addRequirement(normalizedKey(e.Key), corev1.NodeSelectorOpIn, e.Values); err != nil {
					return nil, nil, Volume{Problem: VolumeAllowedTopologies, StorageClass: sc.Name, Detail: err.Error()}
				}
			}
			terms = append(terms, b)
		}
		cross(terms)
	}
	return alts, drivers, nil
}

package engine

// The names below are the model room's, under the engine's name, so that
// callers keep writing engine.Snapshot and engine.Plan.

import "github.com/nodegc/nodegc/engine/model"

// Action is [model.Action].
type Action = model.Action

// Container is [model.Container].
type Container = model.Container

// ContainerKeepReason is [model.ContainerKeepReason].
type ContainerKeepReason = model.ContainerKeepReason

// ContainerPlan is [model.ContainerPlan].
type ContainerPlan = model.ContainerPlan

// ContainerPolicy is [model.ContainerPolicy].
type ContainerPolicy = model.ContainerPolicy

// ContainerRemoval is [model.ContainerRemoval].
type ContainerRemoval = model.ContainerRemoval

// ContainerRemoveReason is [model.ContainerRemoveReason].
type ContainerRemoveReason = model.ContainerRemoveReason

// ContainerRow is [model.ContainerRow].
type ContainerRow = model.ContainerRow

// ContainerState is [model.ContainerState].
type ContainerState = model.ContainerState

// CutLine is [model.CutLine].
type CutLine = model.CutLine

// DiskPolicy is [model.DiskPolicy].
type DiskPolicy = model.DiskPolicy

// DiskReserve is [model.DiskReserve].
type DiskReserve = model.DiskReserve

// Event is [model.Event].
type Event = model.Event

// EvictionLine is [model.EvictionLine].
type EvictionLine = model.EvictionLine

// Explanation is [model.Explanation].
type Explanation = model.Explanation

// FsReserve is [model.FsReserve].
type FsReserve = model.FsReserve

// FsStats is [model.FsStats].
type FsStats = model.FsStats

// Image is [model.Image].
type Image = model.Image

// ImageFsUsage is [model.ImageFsUsage].
type ImageFsUsage = model.ImageFsUsage

// ImageKeep is [model.ImageKeep].
type ImageKeep = model.ImageKeep

// ImageKeepReason is [model.ImageKeepReason].
type ImageKeepReason = model.ImageKeepReason

// ImagePlan is [model.ImagePlan].
type ImagePlan = model.ImagePlan

// ImagePolicy is [model.ImagePolicy].
type ImagePolicy = model.ImagePolicy

// ImageRecord is [model.ImageRecord].
type ImageRecord = model.ImageRecord

// ImageRemoval is [model.ImageRemoval].
type ImageRemoval = model.ImageRemoval

// ImageRemoveReason is [model.ImageRemoveReason].
type ImageRemoveReason = model.ImageRemoveReason

// ImageRow is [model.ImageRow].
type ImageRow = model.ImageRow

// ItemKind is [model.ItemKind].
type ItemKind = model.ItemKind

// ItemResult is [model.ItemResult].
type ItemResult = model.ItemResult

// JournalEntry is [model.JournalEntry].
type JournalEntry = model.JournalEntry

// JournalOp is [model.JournalOp].
type JournalOp = model.JournalOp

// JournalPass is [model.JournalPass].
type JournalPass = model.JournalPass

// LogFiles is [model.LogFiles].
type LogFiles = model.LogFiles

// LogLink is [model.LogLink].
type LogLink = model.LogLink

// LogPlan is [model.LogPlan].
type LogPlan = model.LogPlan

// LogRemoval is [model.LogRemoval].
type LogRemoval = model.LogRemoval

// LogRow is [model.LogRow].
type LogRow = model.LogRow

// Outcome is [model.Outcome].
type Outcome = model.Outcome

// PassKind is [model.PassKind].
type PassKind = model.PassKind

// PassReport is [model.PassReport].
type PassReport = model.PassReport

// Plan is [model.Plan].
type Plan = model.Plan

// PodSource is [model.PodSource].
type PodSource = model.PodSource

// Policy is [model.Policy].
type Policy = model.Policy

// PolicyError is [model.PolicyError].
type PolicyError = model.PolicyError

// Progress is [model.Progress].
type Progress = model.Progress

// Reader is [model.Reader].
type Reader = model.Reader

// Remover is [model.Remover].
type Remover = model.Remover

// Runtime is [model.Runtime].
type Runtime = model.Runtime

// RuntimeInfo is [model.RuntimeInfo].
type RuntimeInfo = model.RuntimeInfo

// Sandbox is [model.Sandbox].
type Sandbox = model.Sandbox

// SandboxInfoReader is [model.SandboxInfoReader].
type SandboxInfoReader = model.SandboxInfoReader

// SandboxPlan is [model.SandboxPlan].
type SandboxPlan = model.SandboxPlan

// SandboxRemoval is [model.SandboxRemoval].
type SandboxRemoval = model.SandboxRemoval

// SandboxRow is [model.SandboxRow].
type SandboxRow = model.SandboxRow

// SandboxState is [model.SandboxState].
type SandboxState = model.SandboxState

// Snapshot is [model.Snapshot].
type Snapshot = model.Snapshot

// SnapshotError is [model.SnapshotError].
type SnapshotError = model.SnapshotError

// APIVersion is [model.APIVersion].
const APIVersion = model.APIVersion

// ActionKeep is [model.ActionKeep].
const ActionKeep = model.ActionKeep

// ActionRemove is [model.ActionRemove].
const ActionRemove = model.ActionRemove

// ConfigSourceAPI is [model.ConfigSourceAPI].
const ConfigSourceAPI = model.ConfigSourceAPI

// ContainerCreated is [model.ContainerCreated].
const ContainerCreated = model.ContainerCreated

// ContainerExited is [model.ContainerExited].
const ContainerExited = model.ContainerExited

// ContainerGCPeriod is [model.ContainerGCPeriod].
const ContainerGCPeriod = model.ContainerGCPeriod

// ContainerKeepActive is [model.ContainerKeepActive].
const ContainerKeepActive = model.ContainerKeepActive

// ContainerKeepNewest is [model.ContainerKeepNewest].
const ContainerKeepNewest = model.ContainerKeepNewest

// ContainerKeepNotPlanned is [model.ContainerKeepNotPlanned].
const ContainerKeepNotPlanned = model.ContainerKeepNotPlanned

// ContainerKeepTooYoung is [model.ContainerKeepTooYoung].
const ContainerKeepTooYoung = model.ContainerKeepTooYoung

// ContainerLogsDir is [model.ContainerLogsDir].
const ContainerLogsDir = model.ContainerLogsDir

// ContainerRunning is [model.ContainerRunning].
const ContainerRunning = model.ContainerRunning

// ContainerUnknown is [model.ContainerUnknown].
const ContainerUnknown = model.ContainerUnknown

// DefaultContainerMinAge is [model.DefaultContainerMinAge].
const DefaultContainerMinAge = model.DefaultContainerMinAge

// DefaultImageGCHighThresholdPercent is [model.DefaultImageGCHighThresholdPercent].
const DefaultImageGCHighThresholdPercent = model.DefaultImageGCHighThresholdPercent

// DefaultImageGCLowThresholdPercent is [model.DefaultImageGCLowThresholdPercent].
const DefaultImageGCLowThresholdPercent = model.DefaultImageGCLowThresholdPercent

// DefaultImageMinimumGCAge is [model.DefaultImageMinimumGCAge].
const DefaultImageMinimumGCAge = model.DefaultImageMinimumGCAge

// DefaultLowDiskSpaceThresholdMiB is [model.DefaultLowDiskSpaceThresholdMiB].
const DefaultLowDiskSpaceThresholdMiB = model.DefaultLowDiskSpaceThresholdMiB

// DefaultMaxContainers is [model.DefaultMaxContainers].
const DefaultMaxContainers = model.DefaultMaxContainers

// DefaultMaxPerPodContainer is [model.DefaultMaxPerPodContainer].
const DefaultMaxPerPodContainer = model.DefaultMaxPerPodContainer

// DefaultPodLogsDir is [model.DefaultPodLogsDir].
const DefaultPodLogsDir = model.DefaultPodLogsDir

// DetailPinned is [model.DetailPinned].
const DetailPinned = model.DetailPinned

// DetailSandboxImagePinned is [model.DetailSandboxImagePinned].
const DetailSandboxImagePinned = model.DetailSandboxImagePinned

// DetailSandboxImageUnpinned is [model.DetailSandboxImageUnpinned].
const DetailSandboxImageUnpinned = model.DetailSandboxImageUnpinned

// EventContainerGCFailed is [model.EventContainerGCFailed].
const EventContainerGCFailed = model.EventContainerGCFailed

// EventFreeDiskSpaceFailed is [model.EventFreeDiskSpaceFailed].
const EventFreeDiskSpaceFailed = model.EventFreeDiskSpaceFailed

// EventImageGCFailed is [model.EventImageGCFailed].
const EventImageGCFailed = model.EventImageGCFailed

// EventInvalidDiskCapacity is [model.EventInvalidDiskCapacity].
const EventInvalidDiskCapacity = model.EventInvalidDiskCapacity

// ImageGCPeriod is [model.ImageGCPeriod].
const ImageGCPeriod = model.ImageGCPeriod

// ItemContainer is [model.ItemContainer].
const ItemContainer = model.ItemContainer

// ItemImage is [model.ItemImage].
const ItemImage = model.ItemImage

// ItemLog is [model.ItemLog].
const ItemLog = model.ItemLog

// ItemSandbox is [model.ItemSandbox].
const ItemSandbox = model.ItemSandbox

// JournalCheckpoint is [model.JournalCheckpoint].
const JournalCheckpoint = model.JournalCheckpoint

// JournalFailed is [model.JournalFailed].
const JournalFailed = model.JournalFailed

// JournalGone is [model.JournalGone].
const JournalGone = model.JournalGone

// JournalIntent is [model.JournalIntent].
const JournalIntent = model.JournalIntent

// JournalNotRemoved is [model.JournalNotRemoved].
const JournalNotRemoved = model.JournalNotRemoved

// JournalNotRun is [model.JournalNotRun].
const JournalNotRun = model.JournalNotRun

// JournalRemoved is [model.JournalRemoved].
const JournalRemoved = model.JournalRemoved

// JournalSkipped is [model.JournalSkipped].
const JournalSkipped = model.JournalSkipped

// JournalStarted is [model.JournalStarted].
const JournalStarted = model.JournalStarted

// JournalUnknown is [model.JournalUnknown].
const JournalUnknown = model.JournalUnknown

// KeepBadSize is [model.KeepBadSize].
const KeepBadSize = model.KeepBadSize

// KeepInUse is [model.KeepInUse].
const KeepInUse = model.KeepInUse

// KeepNotNeeded is [model.KeepNotNeeded].
const KeepNotNeeded = model.KeepNotNeeded

// KeepPinned is [model.KeepPinned].
const KeepPinned = model.KeepPinned

// KeepSandboxImage is [model.KeepSandboxImage].
const KeepSandboxImage = model.KeepSandboxImage

// KeepTooYoung is [model.KeepTooYoung].
const KeepTooYoung = model.KeepTooYoung

// KindPlan is [model.KindPlan].
const KindPlan = model.KindPlan

// KindSnapshot is [model.KindSnapshot].
const KindSnapshot = model.KindSnapshot

// LogDangling is [model.LogDangling].
const LogDangling = model.LogDangling

// LogPodDirRemoved is [model.LogPodDirRemoved].
const LogPodDirRemoved = model.LogPodDirRemoved

// LogPodRemovable is [model.LogPodRemovable].
const LogPodRemovable = model.LogPodRemovable

// OutcomeFailed is [model.OutcomeFailed].
const OutcomeFailed = model.OutcomeFailed

// OutcomeGone is [model.OutcomeGone].
const OutcomeGone = model.OutcomeGone

// OutcomeNotRun is [model.OutcomeNotRun].
const OutcomeNotRun = model.OutcomeNotRun

// OutcomePlanned is [model.OutcomePlanned].
const OutcomePlanned = model.OutcomePlanned

// OutcomeRemoved is [model.OutcomeRemoved].
const OutcomeRemoved = model.OutcomeRemoved

// OutcomeSkipped is [model.OutcomeSkipped].
const OutcomeSkipped = model.OutcomeSkipped

// PassContainers is [model.PassContainers].
const PassContainers = model.PassContainers

// PassFull is [model.PassFull].
const PassFull = model.PassFull

// PassImages is [model.PassImages].
const PassImages = model.PassImages

// PassReclaimAll is [model.PassReclaimAll].
const PassReclaimAll = model.PassReclaimAll

// RemoveForAge is [model.RemoveForAge].
const RemoveForAge = model.RemoveForAge

// RemoveForReclaim is [model.RemoveForReclaim].
const RemoveForReclaim = model.RemoveForReclaim

// RemoveForSpace is [model.RemoveForSpace].
const RemoveForSpace = model.RemoveForSpace

// RemoveNodeLimit is [model.RemoveNodeLimit].
const RemoveNodeLimit = model.RemoveNodeLimit

// RemovePerContainerLimit is [model.RemovePerContainerLimit].
const RemovePerContainerLimit = model.RemovePerContainerLimit

// RemovePodRemovable is [model.RemovePodRemovable].
const RemovePodRemovable = model.RemovePodRemovable

// SandboxNotReady is [model.SandboxNotReady].
const SandboxNotReady = model.SandboxNotReady

// SandboxPodRemovable is [model.SandboxPodRemovable].
const SandboxPodRemovable = model.SandboxPodRemovable

// SandboxReady is [model.SandboxReady].
const SandboxReady = model.SandboxReady

// SandboxSuperseded is [model.SandboxSuperseded].
const SandboxSuperseded = model.SandboxSuperseded

// UsageFromListing is [model.UsageFromListing].
const UsageFromListing = model.UsageFromListing

// ErrNotFound is [model.ErrNotFound].
var ErrNotFound = model.ErrNotFound

// ErrUnavailable is [model.ErrUnavailable].
var ErrUnavailable = model.ErrUnavailable

// CheckPodLogsDir is [model.CheckPodLogsDir].
func CheckPodLogsDir(dir string) error {
	return model.CheckPodLogsDir(dir)
}

// ContainerStateOther is [model.ContainerStateOther].
func ContainerStateOther(n int32) model.ContainerState {
	return model.ContainerStateOther(n)
}

// DefaultPolicy is [model.DefaultPolicy].
func DefaultPolicy() model.Policy {
	return model.DefaultPolicy()
}

// IsSandboxImage is [model.IsSandboxImage].
func IsSandboxImage(img model.Image, refs []string) bool {
	return model.IsSandboxImage(img, refs)
}

// SandboxStateOther is [model.SandboxStateOther].
func SandboxStateOther(n int32) model.SandboxState {
	return model.SandboxStateOther(n)
}

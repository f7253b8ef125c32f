package operator

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns joiner's structured logger: one zap JSON object per
// line with keys level, time (ISO 8601), logger, message (and caller at
// debug), written to w at the given level (debug, info or error). logr's
// V(1) is zap's debug.
func NewLogger(level string, w io.Writer) (logr.Logger, error) {
	sink := zapcore.AddSync(w)
	return newLogger(level, sink, sink)
}

// NewLoggerToPaths is NewLogger writing to Karpenter's LOG_OUTPUT_PATHS
// and LOG_ERROR_OUTPUT_PATHS: comma-separated zap sinks (stdout, stderr or
// file paths); the error paths receive the logger's own failures.
func NewLoggerToPaths(level, outputPaths, errorOutputPaths string) (logr.Logger, error) {
	out, _, err := zap.Open(strings.Split(outputPaths, ",")...)
	if err != nil {
		return logr.Logger{}, fmt.Errorf("opening log-output-paths %q: %w", outputPaths, err)
	}
	errOut, _, err := zap.Open(strings.Split(errorOutputPaths, ",")...)
	if err != nil {
		return logr.Logger{}, fmt.Errorf("opening log-error-output-paths %q: %w", errorOutputPaths, err)
	}
	return newLogger(level, out, errOut)
}

func newLogger(level string, sink, errSink zapcore.WriteSyncer) (logr.Logger, error) {
	var lvl zapcore.Level
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "info":
		lvl = zapcore.InfoLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		return logr.Logger{}, fmt.Errorf("log level %q is not one of debug, info, error", level)
	}
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey:        "time",
		LevelKey:       "level",
		NameKey:        "logger",
		CallerKey:      "caller",
		MessageKey:     "message",
		StacktraceKey:  "stacktrace",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.CapitalLevelEncoder,
		EncodeTime:     zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeCaller:   zapcore.ShortCallerEncoder,
		EncodeName:     zapcore.FullNameEncoder,
	})
	opts := []zap.Option{zap.ErrorOutput(errSink), zap.AddStacktrace(zapcore.DPanicLevel)}
	if lvl == zapcore.DebugLevel {
		opts = append(opts, zap.AddCaller())
	}
	return zapr.NewLogger(zap.New(lazyWith{zapcore.NewCore(enc, sink, lvl)}, opts...)), nil
}

// lazyWith defers encoding a logger's added fields (WithValues) until the
// logger writes an entry, with zap's own lazy core: controller-runtime
// gives every reconcile a logger with the controller, the object and a
// reconcile ID, and zap's JSON core encodes them at once into a fresh
// buffer of a kilobyte or more, though most reconciles log nothing (in a
// 3,000-pod load run, a tenth of all that joiner allocated). What is
// written is the same.
type lazyWith struct{ zapcore.Core }

// With wraps the fields in a lazy core over the eager one, itself lazy
// for the fields the next With adds.
func (c lazyWith) With(fields []zapcore.Field) zapcore.Core {
	return lazyWith{zapcore.NewLazyWith(c.Core, fields)}
}

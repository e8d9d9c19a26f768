package scene

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/splathost/splathost/internal/plyfile"
	"io"
	"io/fs"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bounds of a bundled .sog (a zip that viewers unpack in the browser). splat-transform writes
// meta.json and about eight WebP textures, stored or deflated; meta.json holds the codebooks,
// a few KiB. The bounds refuse zip bombs (a 1 GiB meta.json deflated to 1 MB) and directories
// built to make the reader work, while leaving real scenes far inside them.
const (
	// sogMaxEntries bounds the files of one archive.
	sogMaxEntries = 64
	// sogMaxMeta bounds meta.json, which viewers read whole and parse as JSON.
	sogMaxMeta = 4 << 20
	// sogMaxRatio bounds any entry's uncompressed size over its compressed size: WebP does not
	// compress further and JSON of floats deflates about 3:1, while a bomb needs 1000:1.
	sogMaxRatio = 100
	// sogMaxUnpacked bounds the sum of the entries' uncompressed sizes: the largest scene file
	// an upload may be.
	sogMaxUnpacked = MaxMultipartFileBytes
	// sogMeta is the entry every bundled SOG has, describing the textures.
	sogMeta = "meta.json"
)

// inspectReadBudget bounds the bytes inspect may read of one object: a PLY header, a zip's
// directory and a meta.json are far below it, and a hostile directory (millions of entries)
// stops at it instead of being read to its end.
const inspectReadBudget = plyfile.MaxHeaderBytes + sogMaxMeta + 4<<20

// inspectors hold the checks that read past the first bytes sniff sees, per extension: the
// formats whose headers claim sizes a viewer trusts. Errors are short messages for the client.
var inspectors = map[string]func(r io.ReaderAt, size int64) error{
	".ply": inspectPLY,
	".sog": inspectSOG,
}

// inspect runs the deeper check of an object whose extension ext has one (after sniff passed);
// r reads the object, of size bytes.
func inspect(ext string, r io.ReaderAt, size int64) error {
	check, ok := inspectors[strings.ToLower(ext)]
	if !ok {
		return nil
	}
	return check(r, size)
}

// inspectPLY reads the whole header (plyfile.ReadHeader, the parser the renditions use) and
// checks the body holds exactly the records it claims (plyfile.Header.CheckSize): a header
// claiming 2^31-1 vertices on a 6 KB body would make every viewer allocate for them.
func inspectPLY(r io.ReaderAt, size int64) error {
	h, err := plyfile.ReadHeader(io.NewSectionReader(r, 0, size))
	if err == nil {
		err = h.CheckSize(size)
	}
	if err != nil {
		return fmt.Errorf("not a valid PLY file: %s", strings.TrimPrefix(err.Error(), "ply: "))
	}
	return nil
}

// inspectSOG reads the archive's directory and bounds its entries, their sizes and ratios, then
// inflates meta.json (at most sogMaxMeta bytes: archive/zip refuses an entry that inflates past
// its declared size) and checks it is JSON.
func inspectSOG(r io.ReaderAt, size int64) error {
	bad := func(format string, a ...any) error { return fmt.Errorf("not a valid .sog file: "+format, a...) }
	zr, err := zip.NewReader(r, size)
	if errors.Is(err, zip.ErrInsecurePath) {
		return bad("an entry's name is not a plain relative path")
	}
	if err != nil {
		var budget *budgetError
		if errors.As(err, &budget) {
			return bad("its directory is larger than any scene's")
		}
		return bad("not a readable zip archive")
	}
	if len(zr.File) > sogMaxEntries {
		return bad("%d entries, at most %d", len(zr.File), sogMaxEntries)
	}
	var total uint64
	var meta *zip.File
	for _, f := range zr.File {
		if !fs.ValidPath(f.Name) || strings.Contains(f.Name, `\`) {
			return bad("an entry's name is not a plain relative path")
		}
		if f.UncompressedSize64 > 0 && f.UncompressedSize64/sogMaxRatio > f.CompressedSize64 {
			return bad("%s unpacks from %d to %d bytes, more than %d times its size", f.Name, f.CompressedSize64, f.UncompressedSize64, sogMaxRatio)
		}
		total += f.UncompressedSize64
		if total > sogMaxUnpacked {
			return bad("its entries unpack to more than %d bytes", int64(sogMaxUnpacked))
		}
		if f.Name == sogMeta {
			meta = f
		}
	}
	if meta == nil {
		return bad("it has no %s", sogMeta)
	}
	if meta.UncompressedSize64 > sogMaxMeta {
		return bad("%s has %d bytes, at most %d", sogMeta, meta.UncompressedSize64, sogMaxMeta)
	}
	rc, err := meta.Open()
	if err != nil {
		return bad("%s cannot be read", sogMeta)
	}
	defer rc.Close()
	text, err := io.ReadAll(io.LimitReader(rc, sogMaxMeta+1))
	if err != nil || len(text) > sogMaxMeta {
		return bad("%s does not unpack to its declared size", sogMeta)
	}
	if !json.Valid(text) {
		return bad("%s is not JSON", sogMeta)
	}
	return nil
}

// objectReader reads one stored object by ranged GETs, for inspect. It fetches whole blocks
// and keeps them, so the small reads of a zip reader cost one GET a block rather than one each,
// and it refuses to read more than budget bytes in all.
type objectReader struct {
	ctx    context.Context
	client *s3.Client
	bucket string
	key    string
	size   int64
	budget int64
	blocks map[int64][]byte
	// err is the store's first failure: the commit's 500, not the file's 400.
	err error
}

// objectBlock is the unit objectReader fetches.
const objectBlock = 256 << 10

// budgetError is an objectReader out of budget: the file is the cause.
type budgetError struct{}

func (*budgetError) Error() string { return "read budget exhausted" }

// ReadAt implements io.ReaderAt.
func (o *objectReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= o.size {
			return n, io.EOF
		}
		b, err := o.block(at / objectBlock)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b[at%objectBlock:])
	}
	return n, nil
}

// block returns block i of the object, fetching it when it is not held yet.
func (o *objectReader) block(i int64) ([]byte, error) {
	if b, ok := o.blocks[i]; ok {
		return b, nil
	}
	start := i * objectBlock
	end := min(start+objectBlock, o.size) - 1
	if o.budget < end-start+1 {
		return nil, &budgetError{}
	}
	o.budget -= end - start + 1
	out, err := o.client.GetObject(o.ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", start, end))})
	if err != nil {
		o.err = err
		return nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, end-start+1))
	if err == nil && int64(len(b)) != end-start+1 {
		err = fmt.Errorf("object %s: read %d bytes of block %d, want %d", o.key, len(b), i, end-start+1)
	}
	if err != nil {
		o.err = err
		return nil, err
	}
	if o.blocks == nil {
		o.blocks = map[int64][]byte{}
	}
	o.blocks[i] = b
	return b, nil
}

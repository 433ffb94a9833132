"""Django admin for the recording side: items, takes and reviews.

Who may use these pages is `annotation.recording.access.RECORDING_ADMINS`, as for the recording
pages' admin side.
"""

from django.contrib import admin

from annotation.recording.access import RECORDING_ADMINS
from annotation.recording.models import Item, Review, Take
from webapp.roles import RoleAdminAccess


class RecordingAdminAccess(RoleAdminAccess):
    admin_roles = RECORDING_ADMINS


@admin.register(Item)
class ItemAdmin(RecordingAdminAccess, admin.ModelAdmin):
    list_display = ("external_id", "scenario", "target_emotion", "target_intensity", "state", "split")
    list_filter = ("scenario", "state", "split", "target_emotion")
    search_fields = ("external_id", "text")
    # Where the item stands and which take was accepted belong to the review workflow.
    readonly_fields = ("state", "recording")


@admin.register(Take)
class TakeAdmin(RecordingAdminAccess, admin.ModelAdmin):
    list_display = ("public_id", "item", "status", "duration_seconds", "created_at")
    list_filter = ("status",)


@admin.register(Review)
class ReviewAdmin(RecordingAdminAccess, admin.ModelAdmin):
    list_display = ("take", "verdict", "submitted_at")
    list_filter = ("verdict",)
